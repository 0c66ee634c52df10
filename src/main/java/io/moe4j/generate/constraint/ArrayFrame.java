package io.moe4j.generate.constraint;

import io.moe4j.generate.constraint.ValueSchema.ArraySchema;
import java.util.List;

/**
 * Inside a JSON array: items by position (prefixItems, then items), between minItems and maxItems of them. A comma
 * is only offered while another item may follow.
 *
 * @param count items finished so far (IN_VALUE: the index of the item in progress)
 * @param ws    whitespace bytes in the current gap
 */
record ArrayFrame(ArraySchema schema, int phase, int count, int ws, int cost) implements Frame {
    static final int OPEN = 0;
    static final int IN_VALUE = 1;
    static final int AFTER_VALUE = 2;
    static final int COMMA = 3;

    static ArrayFrame open(ArraySchema schema) {
        return make(schema, OPEN, 0, 0);
    }

    private static ArrayFrame make(ArraySchema s, int phase, int count, int ws) {
        int cost = switch (phase) {
            case OPEN -> s.minItems() == 0 ? 1 : s.need(0);
            case IN_VALUE -> s.need(count + 1) + 1;
            case AFTER_VALUE -> s.need(count) + 1;
            default -> s.item(count).minLength() + s.need(count + 1) + 1;
        };
        return new ArrayFrame(s, phase, count, ws, cost);
    }

    @Override
    public void step(int b, Stack self, JsonGrammar grammar, List<Stack> out) {
        if (Frame.isWhitespace(b)) {
            if (phase != IN_VALUE && ws < grammar.maxWhitespace()) {
                out.add(self.replace(make(schema, phase, count, ws + 1)));
            }
            return;
        }
        switch (phase) {
            case OPEN -> {
                if (b == ']' && schema.minItems() == 0) {
                    out.add(self.pop());
                } else if (schema.capacity() > 0) {
                    Values.start(schema.item(0), b, self.replace(make(schema, IN_VALUE, 0, 0)), out);
                }
            }
            case COMMA -> Values.start(schema.item(count), b, self.replace(make(schema, IN_VALUE, count, 0)), out);
            case AFTER_VALUE -> {
                if (b == ',' && count < schema.capacity()) {
                    out.add(self.replace(make(schema, COMMA, count, 0)));
                } else if (b == ']' && count >= schema.minItems()) {
                    out.add(self.pop());
                }
            }
            default -> {
                // IN_VALUE holds a child frame above it
            }
        }
    }

    @Override
    public Frame childDone() {
        return make(schema, AFTER_VALUE, count + 1, 0);
    }
}
