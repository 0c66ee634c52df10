package io.moe4j.model;

import io.moe4j.MoeException;

/**
 * One sequence through a {@link Model}: the KV cache of every layer and the number of positions fed so far.
 * Tokens go in as a prompt in one pass ({@link #prefill}) or one at a time ({@link #decode}); the logits are the
 * same either way. Not thread-safe: one session serves one sequence at a time.
 */
public final class Session implements AutoCloseable {
    private final Model model;
    private final SequenceState state;
    private long position;

    Session(Model model, SequenceState state) {
        this.model = model;
        this.state = state;
    }

    /** How many positions this session has consumed (the next token's position). */
    public long position() {
        return position;
    }

    /** The most positions this session can hold (the model's context limit). */
    public int contextLimit() {
        return model.contextLimit();
    }

    /** Feeds the tokens in one pass and returns the logits of every one of them, [tokens.length, vocab]. */
    public float[] prefill(int[] tokens) {
        return forward(tokens, true);
    }

    /** Feeds the tokens in one pass and returns only the last one's logits [vocab] (what generation needs). */
    public float[] prefillLast(int[] tokens) {
        return forward(tokens, false);
    }

    /** Feeds one token and returns its logits [vocab]. */
    public float[] decode(int token) {
        return forward(new int[] {token}, false);
    }

    /**
     * Feeds tokens at positions position() .. position()+n-1. Fails, leaving the session as it was, when they would
     * run past the context limit.
     *
     * @param allLogits every position's logits [n, vocab], or only the last one's [vocab]
     */
    public float[] forward(int[] tokens, boolean allLogits) {
        int n = tokens.length;
        if (n == 0) {
            throw new IllegalArgumentException("no tokens to feed");
        }
        if (position + n > model.contextLimit()) {
            throw new MoeException("context overflow: " + position + " positions held + " + n + " new tokens exceed the"
                    + " context limit of " + model.contextLimit() + " (max_position_embeddings "
                    + model.config().maxPositions() + ")");
        }
        int vocab = model.config().vocab();
        for (int t = 0; t < n; t++) {
            if (tokens[t] < 0 || tokens[t] >= vocab) {
                throw new MoeException("token id " + tokens[t] + " at index " + t + " is outside the vocabulary [0, "
                        + vocab + ")");
            }
        }
        float[] logits = state.forward(tokens, position, allLogits);
        position += n;
        return logits;
    }

    /** Empties the cache: the next token is at position 0 again. */
    public void reset() {
        state.reset();
        position = 0;
    }

    /**
     * Goes back to {@code position}: the tokens fed at it and after are forgotten, so a conversation can continue
     * from a shared prefix without running it again. Possible only while every layer still holds all the rows
     * before {@code position} (a sliding or chunked layer may have dropped some); returns false, changing nothing,
     * when it is not.
     */
    public boolean rewind(long position) {
        if (position < 0 || position > this.position) {
            throw new IllegalArgumentException("cannot rewind to " + position + " (at " + this.position + ")");
        }
        if (!state.rewind(position)) {
            return false;
        }
        this.position = position;
        return true;
    }

    @Override
    public void close() {
        state.close();
        position = 0;
    }
}
