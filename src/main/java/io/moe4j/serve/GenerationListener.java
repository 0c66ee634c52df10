package io.moe4j.serve;

/**
 * Receives one sequence's output. Called on the scheduler's engine thread, so implementations only hand the event
 * over (to a queue) and return at once: a slow listener slows every sequence of the batch.
 */
public interface GenerationListener {

    /** New text that is final (stop strings already cut out); never empty. */
    void onText(String text);

    /**
     * {@link #onText(String)} with the offsets in {@code text} where the text of a special token the model generated
     * ends (null: none), for a reader that trusts only those as markup. By default the offsets are dropped.
     */
    default void onText(String text, int[] specialEnds) {
        onText(text);
    }

    /** {@link #onToken(String, io.moe4j.generate.TokenLogprobs)} with the special tokens' ends in {@code text}. */
    default void onToken(String text, int[] specialEnds, io.moe4j.generate.TokenLogprobs logprobs) {
        onToken(text, logprobs);
    }

    /**
     * A generated token (not an end-of-sequence id) of a request that asked for log-probabilities, with the text it
     * made final (possibly empty: held back, or cut as a stop string). Such a request hears this instead of
     * {@link #onText}; by default it is passed on as text.
     */
    default void onToken(String text, io.moe4j.generate.TokenLogprobs logprobs) {
        if (!text.isEmpty()) {
            onText(text);
        }
    }

    /**
     * Log-probabilities of prompt tokens, in order, for a request that scores its prompt: the first call starts at the
     * prompt's second token (the first has nothing before it), and every one comes before the reply's first token.
     */
    default void onPromptLogprobs(java.util.List<io.moe4j.generate.TokenLogprobs> scored) {
    }

    /** The sequence ended; called exactly once, last. */
    void onFinish(GenerationResult result);
}
