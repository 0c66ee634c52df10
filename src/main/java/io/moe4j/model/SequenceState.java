package io.moe4j.model;

/**
 * The per-sequence state of a decoder (its KV caches) and the forward pass over it, wherever the decoder runs: the
 * host layers ({@link HostSequence}) or a model resident on a device. {@link Session} keeps the position and checks
 * the calls; an implementation trusts them.
 */
public interface SequenceState extends AutoCloseable {

    /**
     * Feeds valid token ids at positions start .. start + tokens.length - 1 (start is the number already fed).
     *
     * @return every position's logits [n, vocab], or only the last one's [vocab]
     */
    float[] forward(int[] tokens, long start, boolean allLogits);

    /** Forgets every position. */
    void reset();

    /** Forgets the positions from {@code position} on (at most the current one); false, changing nothing, if it cannot. */
    boolean rewind(long position);

    @Override
    void close();
}
