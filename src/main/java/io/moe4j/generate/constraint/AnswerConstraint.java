package io.moe4j.generate.constraint;

/**
 * Keeps one generated sequence to an {@link AnswerGrammar}: before each step {@link #fillAllowed} gives the tokens
 * that keep the text a prefix of an answer that can still be finished within the tokens left, after it
 * {@link #accept} takes the token drawn. End tokens are allowed exactly when the text is a complete answer. One
 * instance follows one sequence and is not thread-safe.
 */
public interface AnswerConstraint {
    /** The fewest tokens a sequence needs for the shortest answer from here and its end token. */
    int minTokens();

    /**
     * Sets {@code mask[id]} to whether token id may come next when {@code remaining} tokens, this one included, may
     * still be produced; ids past the vocabulary (a model's padded rows) are refused.
     *
     * @throws io.moe4j.MoeException when {@code remaining} cannot hold even the shortest completion
     */
    void fillAllowed(boolean[] mask, int remaining);

    /** Advances past token {@code id}; fails when it does not continue an answer. */
    void accept(int id);

    /** The text so far is a complete answer (an end token may come). */
    boolean isComplete();

    /**
     * Whether the token budget has shaped the answer: a token that would have continued it while unfinished was left
     * out for its cost, so the reply ends complete but not as the model was writing it (finishes for its length).
     */
    boolean cutByBudget();
}
