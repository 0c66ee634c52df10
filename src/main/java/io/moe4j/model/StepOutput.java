package io.moe4j.model;

/**
 * What a batched step ({@link Model#step(java.util.List, java.util.List, boolean[])}) gives back, one entry per
 * sequence: the logits after its last new token, or, for a sequence that asked only for the greedy choice, null
 * there and the chosen id in {@code greedy} (the index of its largest logit, {@link Logits#argmax}'s rule; -1 for
 * the sequences that took logits). A runtime on a device picks those ids there and reads back one int a sequence
 * instead of the vocabulary's logits.
 */
public record StepOutput(float[][] logits, int[] greedy) {
    public StepOutput {
        if (logits.length != greedy.length) {
            throw new IllegalArgumentException(logits.length + " logits rows but " + greedy.length + " greedy ids");
        }
    }

    /** From every sequence's logits: the greedy ones keep only their argmax. */
    public static StepOutput of(float[][] logits, boolean[] greedyOnly) {
        int[] greedy = new int[logits.length];
        for (int i = 0; i < logits.length; i++) {
            greedy[i] = -1;
            if (greedyOnly[i]) {
                greedy[i] = Logits.argmax(logits[i], 0, logits[i].length);
                logits[i] = null;
            }
        }
        return new StepOutput(logits, greedy);
    }
}
