package io.moe4j.generate.constraint;

import java.util.List;

/**
 * The bottom of every stack: the document's one value, with bounded whitespace before it and none after it (after
 * the value only the end of the text may come, so a model cannot spend its budget on trailing blanks).
 */
record RootFrame(ValueSchema schema, int phase, int ws) implements Frame {
    static final int BEFORE = 0;
    static final int IN_VALUE = 1;
    static final int DONE = 2;

    static RootFrame start(ValueSchema schema) {
        return new RootFrame(schema, BEFORE, 0);
    }

    boolean isDone() {
        return phase == DONE;
    }

    @Override
    public void step(int b, Stack self, JsonGrammar grammar, List<Stack> out) {
        if (phase != BEFORE) {
            return;
        }
        if (Frame.isWhitespace(b)) {
            if (ws < grammar.maxWhitespace()) {
                out.add(self.replace(new RootFrame(schema, BEFORE, ws + 1)));
            }
            return;
        }
        Values.start(schema, b, self.replace(new RootFrame(schema, IN_VALUE, 0)), out);
    }

    @Override
    public int cost() {
        return phase == BEFORE ? schema.minLength() : 0;
    }

    @Override
    public Frame childDone() {
        return new RootFrame(schema, DONE, 0);
    }
}
