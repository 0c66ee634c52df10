package io.moe4j.model;

/**
 * What a batched step ({@link Model#step(java.util.List, java.util.List, TokenDraw[])}) gives back, one entry per
 * sequence: the logits after its last new token, or, for a sequence that asked for its next token to be drawn, null
 * there and the drawn id in {@code drawn} ({@link TokenDraw}'s rule; -1 for the sequences that took logits). A
 * runtime on a device draws those ids there and reads back one int a sequence instead of the vocabulary's logits.
 * A draw that found no finite logit to draw from gives -1 and no logits.
 */
public record StepOutput(float[][] logits, int[] drawn) {
    public StepOutput {
        if (logits.length != drawn.length) {
            throw new IllegalArgumentException(logits.length + " logits rows but " + drawn.length + " drawn ids");
        }
    }

    /** From every sequence's logits: those with a draw keep only the token drawn. */
    public static StepOutput of(float[][] logits, TokenDraw[] draws) {
        int[] drawn = new int[logits.length];
        for (int i = 0; i < logits.length; i++) {
            drawn[i] = -1;
            if (draws[i] != null) {
                drawn[i] = TokenDraw.pickOrNone(draws[i], logits[i]);
                logits[i] = null;
            }
        }
        return new StepOutput(logits, drawn);
    }
}
