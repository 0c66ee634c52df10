package io.moe4j.generate;

/**
 * How many tokens one reply may still produce: no more than its own budget leaves, and no more than its sequence's
 * context leaves. {@link Generator} and the server's scheduler both ask it, before each draw (what a
 * {@link ReplyStream} passes to a constraint, so that a JSON reply closes in the room that is really left) and after
 * each token (whether the reply has reached its length); so the room a constraint is told is always the room the
 * reply really has.
 *
 * <p>A sequence's tokens are counted whole: earlier turns, the prompt and the reply so far, the token just drawn
 * included once it is drawn. The two callers differ only in how many such tokens a context may hold, which each
 * states when it makes its budget: the generator one more than its session's positions (the last token drawn is
 * never fed), the scheduler its model's context length (as vLLM counts {@code max_model_len}).
 *
 * @param maxTokens     the most tokens the reply may produce (0: none, a prompt only scored)
 * @param contextTokens the most tokens the sequence may hold in all
 */
public record ReplyBudget(int maxTokens, long contextTokens) {
    public ReplyBudget {
        if (maxTokens < 0) {
            throw new IllegalArgumentException("max tokens must be >= 0, got " + maxTokens);
        }
        if (contextTokens < 1) {
            throw new IllegalArgumentException("a context must hold at least one token, got " + contextTokens);
        }
    }

    /**
     * The tokens the reply may still produce, the next one included (0 when none).
     *
     * @param generated the reply's tokens so far
     * @param held      the sequence's tokens so far (earlier turns, the prompt and {@code generated})
     */
    public int room(int generated, long held) {
        return (int) Math.min(Math.max(0, maxTokens - generated), contextRoom(held));
    }

    /** The tokens the context still takes after {@code held} (0 when none), whatever the reply's own budget. */
    public long contextRoom(long held) {
        return Math.max(0, contextTokens - held);
    }

    /** Whether the reply has reached its length: its budget is spent or its context is full (no room left). */
    public boolean spent(int generated, long held) {
        return room(generated, held) == 0;
    }
}
