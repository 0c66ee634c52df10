package io.moe4j.model;

/**
 * A decoder stack that runs somewhere other than the host layers of {@link Model} (a model resident on a device):
 * it owns its weights and hands out the state of each sequence. Chosen by {@link ModelOptions#backend()}.
 */
public interface DecoderRuntime extends AutoCloseable {

    /** The state of a new, empty sequence. */
    SequenceState newSequence();

    /**
     * One step of continuous batching over sequences of this runtime: feeds {@code tokens.get(i)} to
     * {@code sequences.get(i)} at positions {@code starts[i]}.. (the caller checked them) and returns each sequence's
     * logits after its last new token, [sequences][vocab], or only the token drawn where {@code draws[i]} is not
     * null ({@link StepOutput}). The default feeds them one after another; a runtime that runs them in one forward
     * overrides it. A failure may leave any of the sequences part-updated.
     */
    default StepOutput step(java.util.List<SequenceState> sequences, java.util.List<int[]> tokens, long[] starts,
            TokenDraw[] draws) {
        float[][] out = new float[sequences.size()][];
        int[] drawn = new int[out.length];
        for (int i = 0; i < out.length; i++) {
            SequenceState s = sequences.get(i);
            drawn[i] = draws[i] == null ? -1 : s.forwardDrawn(tokens.get(i), starts[i], draws[i]);
            out[i] = draws[i] == null ? s.forward(tokens.get(i), starts[i], false) : null;
        }
        return new StepOutput(out, drawn);
    }

    /** One line for logs: where the decoder runs and how its head is stored. */
    String describe();

    @Override
    void close();
}
