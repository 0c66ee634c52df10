package io.moe4j.model;

/** Rules over a row of logits that every runtime applies alike, wherever the logits are. */
public final class Logits {
    private Logits() {
    }

    /**
     * The greedy choice: the index of the largest of {@code logits[off, off + n)}, the lowest index on ties. The scan
     * starts at the first value and keeps it unless a later one is larger, so a NaN is never chosen after the first
     * value (and the first value is chosen when it is NaN). A device runtime that picks the token itself follows
     * this rule exactly, answering -1 where the chosen value is NaN or -infinity ({@link
     * SequenceState#forwardGreedy}).
     */
    public static int argmax(float[] logits, int off, int n) {
        if (n <= 0) {
            throw new IllegalArgumentException("no logits to choose from");
        }
        int best = 0;
        float bestValue = logits[off];
        for (int i = 1; i < n; i++) {
            float v = logits[off + i];
            if (v > bestValue) {
                best = i;
                bestValue = v;
            }
        }
        return best;
    }
}
