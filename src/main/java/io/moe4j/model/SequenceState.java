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

    /**
     * {@link #forward} of valid token ids with only the greedy choice of the last position coming back: the index of
     * its largest logit by {@link Logits#argmax}'s rule, or -1 where that logit is NaN or -infinity (no finite choice:
     * a NaN model output is an error, not token 0), as {@link TokenDraw}'s greedy draw. A device runtime computes it
     * where the logits are and reads back one id instead of the vocabulary's logits; the host's default takes it from
     * {@link #forward}'s.
     */
    default int forwardGreedy(int[] tokens, long start) {
        return TokenDraw.pickOrNone(TokenDraw.greedy(), forward(tokens, start, false));
    }

    /**
     * {@link #forward} of valid token ids with only the token drawn from the last position's logits coming back, by
     * {@link TokenDraw}'s rule, or -1 when none of those logits is finite. A device runtime draws where the logits
     * are; the host's default draws from {@link #forward}'s (greedy draws go to {@link #forwardGreedy}).
     */
    default int forwardDrawn(int[] tokens, long start, TokenDraw draw) {
        if (draw.isGreedy()) {
            return forwardGreedy(tokens, start);
        }
        return TokenDraw.pickOrNone(draw, forward(tokens, start, false));
    }

    /** Forgets every position. */
    void reset();

    /** Forgets the positions from {@code position} on (at most the current one); false, changing nothing, if it cannot. */
    boolean rewind(long position);

    /**
     * Keeps what a rewind of up to {@code positions} positions needs (a windowed host layer otherwise drops every
     * row no later query sees). A runtime whose caches keep every row ignores it.
     */
    default void keepForRewind(int positions) {
    }

    /**
     * A new state holding this one's first {@code position} positions, which then changes apart from this one (a
     * shared prefix copied rather than fed again); null, changing nothing, where the runtime cannot (or a windowed
     * layer no longer holds what the copy's next query sees).
     */
    default SequenceState fork(long position) {
        return null;
    }

    @Override
    void close();
}
