package io.moe4j.serve;

/**
 * Receives one sequence's output. Called on the scheduler's engine thread, so implementations only hand the event
 * over (to a queue) and return at once: a slow listener slows every sequence of the batch.
 */
public interface GenerationListener {

    /** New text that is final (stop strings already cut out); never empty. */
    void onText(String text);

    /** The sequence ended; called exactly once, last. */
    void onFinish(GenerationResult result);
}
