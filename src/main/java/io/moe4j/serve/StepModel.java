package io.moe4j.serve;

import io.moe4j.model.StepOutput;
import io.moe4j.model.TokenDraw;
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
     * {@link #step} where the sequences with a draw ({@code draws[i]} not null) need only the token it draws from
     * their logits ({@link TokenDraw}'s rule): a model on a device draws those ids there and sends back one int
     * instead of a logits row. The default draws from {@link #step}'s logits.
     */
    default StepOutput step(List<Sequence> sequences, List<int[]> tokens, TokenDraw[] draws) {
        return StepOutput.of(step(sequences, tokens), draws);
    }

    /**
     * Appends {@code tokens} to one sequence, alone, and returns the logits after every one of them, row-major
     * [tokens.length * vocabSize()]: what scoring a prompt needs (each prompt token's log-probability given those
     * before it). The same rules as {@link #step}; a model that cannot return every row says so.
     */
    default float[] stepEveryRow(Sequence sequence, int[] tokens) {
        throw new UnsupportedOperationException("this model returns the logits of a step's last position only");
    }

    /** One sequence's state inside the model. Closing it frees its cache; it is then never stepped again. */
    interface Sequence extends AutoCloseable {
        /** Tokens held so far. */
        int length();

        /**
         * Goes back to holding its first {@code length} tokens, so that a request sharing them continues from there
         * without feeding them again; false (nothing changed) where the model cannot.
         */
        default boolean rewind(int length) {
            return false;
        }

        /**
         * A new sequence holding this one's first {@code length} tokens, copied rather than fed again; this one is
         * unchanged. Null where the model cannot copy them.
         */
        default Sequence fork(int length) {
            return null;
        }

        /** Keeps, from now on, what a rewind of up to {@code positions} positions needs (sliding-window layers). */
        default void keepForRewind(int positions) {
        }

        @Override
        void close();
    }
}
