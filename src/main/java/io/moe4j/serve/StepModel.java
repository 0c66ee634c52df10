package io.moe4j.serve;

import io.moe4j.model.StepOutput;
import java.util.List;

/**
 * The model as the scheduler drives it: many sequences, each with its own KV cache, advanced together in one batched
 * forward per step. A step feeds every listed sequence a run of new tokens (a chunk of its prompt, or the one token
 * sampled last step) and returns the logits after the last of them, one row per sequence.
 *
 * <p>All calls come from the scheduler's single engine thread, so an implementation needs no locking of its own.
 */
public interface StepModel {

    /** Size of a logits row. */
    int vocabSize();

    /** The most tokens one sequence may hold (prompt and generated together). */
    int contextLength();

    /** Opens an empty sequence (allocates its KV cache). */
    Sequence open();

    /**
     * Appends {@code tokens.get(i)} to {@code sequences.get(i)} for every i, in one forward, and returns the logits of
     * each sequence's last new position: row i has {@link #vocabSize()} floats. Every token run is non-empty and no
     * sequence grows past {@link #contextLength()}. A failure leaves the sequences in an unspecified state: the caller
     * closes them.
     */
    float[][] step(List<Sequence> sequences, List<int[]> tokens);

    /**
     * {@link #step} where the sequences marked in {@code greedyOnly} need only their greedy choice (the index of the
     * largest logit): a model on a device picks those ids there and sends back one int instead of a logits row. The
     * default takes the argmax of {@link #step}'s logits.
     */
    default StepOutput step(List<Sequence> sequences, List<int[]> tokens, boolean[] greedyOnly) {
        return StepOutput.of(step(sequences, tokens), greedyOnly);
    }

    /** One sequence's state inside the model. Closing it frees its cache; it is then never stepped again. */
    interface Sequence extends AutoCloseable {
        /** Tokens held so far. */
        int length();

        @Override
        void close();
    }
}
