package io.moe4j.serve;

/**
 * Bounds of the scheduler.
 *
 * @param maxSequences  sequences stepped together at most (each holds a KV cache)
 * @param maxQueue      requests waiting for a free slot at most; one more is refused
 * @param prefillTokens prompt tokens fed per step at most, over all sequences still reading their prompt (in the
 *                      order they joined), so requests that join delay the running sequences' next tokens by a
 *                      bounded amount: a step carries at most one token per decoding sequence plus this many
 * @param prefixCache   finished sequences kept with their KV caches, so that a request sharing the start of one's
 *                      tokens (the next turn of a conversation, the same system prompt and tools) feeds only the
 *                      rest ({@link PrefixCache}); 0 keeps none
 */
public record SchedulerConfig(int maxSequences, int maxQueue, int prefillTokens, int prefixCache) {
    public SchedulerConfig(int maxSequences, int maxQueue, int prefillTokens) {
        this(maxSequences, maxQueue, prefillTokens, 0);
    }

    public SchedulerConfig {
        if (prefixCache < 0) {
            throw new IllegalArgumentException("prefix cache must be >= 0 sequences, got " + prefixCache);
        }
        if (maxSequences < 1) {
            throw new IllegalArgumentException("max sequences must be >= 1, got " + maxSequences);
        }
        if (maxQueue < 0) {
            throw new IllegalArgumentException("max queue must be >= 0, got " + maxQueue);
        }
        if (prefillTokens < 1) {
            throw new IllegalArgumentException("prefill tokens per step must be >= 1, got " + prefillTokens);
        }
    }

    public static SchedulerConfig defaults() {
        return new SchedulerConfig(16, 64, 512);
    }
}
