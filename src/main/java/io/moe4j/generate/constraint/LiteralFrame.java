package io.moe4j.generate.constraint;

import io.moe4j.generate.constraint.ValueSchema.LiteralSchema;
import java.util.Arrays;
import java.util.List;

/**
 * Inside one of a fixed set of texts (enum, const, true/false/null): {@code alive} are the indices of the texts
 * that still match the {@code pos} bytes read. A frame whose texts have all ended is popped at once; one where a
 * text has ended but another goes on (enum [1, 12]) ends like a number, when the next byte extends none.
 */
record LiteralFrame(LiteralSchema schema, int[] alive, int pos, int cost, boolean canEnd) implements Frame {

    static void start(LiteralSchema schema, int b, Stack parent, List<Stack> out) {
        advance(schema, null, 0, b, parent, out);
    }

    @Override
    public void step(int b, Stack self, JsonGrammar grammar, List<Stack> out) {
        advance(schema, alive, pos, b, self.below(), out);
        if (canEnd) {
            Stack parent = self.pop();
            parent.top().step(b, parent, grammar, out);
        }
    }

    /** The texts among {@code alive} (all when null) whose byte at {@code pos} is b, pushed on {@code parent}. */
    private static void advance(LiteralSchema schema, int[] alive, int pos, int b, Stack parent, List<Stack> out) {
        byte[][] texts = schema.texts();
        int n = alive == null ? texts.length : alive.length;
        int[] next = new int[n];
        int count = 0;
        int cost = Integer.MAX_VALUE;
        boolean ends = false;
        boolean goesOn = false;
        for (int k = 0; k < n; k++) {
            int i = alive == null ? k : alive[k];
            byte[] text = texts[i];
            if (text.length > pos && (text[pos] & 0xFF) == b) {
                next[count++] = i;
                int rest = text.length - pos - 1;
                cost = Math.min(cost, schema.suffixCosts()[i][pos + 1]);
                ends |= rest == 0;
                goesOn |= rest > 0;
            }
        }
        if (count == 0) {
            return;
        }
        LiteralFrame frame = new LiteralFrame(schema, Arrays.copyOf(next, count), pos + 1, cost, ends);
        Stack pushed = parent.push(frame);
        out.add(goesOn ? pushed : pushed.pop());
    }
}
