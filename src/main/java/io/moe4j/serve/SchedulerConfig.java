package io.moe4j.serve;

/**
 * Bounds of the scheduler.
 *
 * @param maxSequences  sequences stepped together at most (each holds a KV cache)
 * @param maxQueue      requests waiting for a free slot at most; one more is refused
 * @param prefillChunk  prompt tokens of one sequence fed per step at most, so a long prompt joining the batch delays
 *                      the running sequences' next tokens by a bounded amount
 */
public record SchedulerConfig(int maxSequences, int maxQueue, int prefillChunk) {
    public SchedulerConfig {
        if (maxSequences < 1) {
            throw new IllegalArgumentException("max sequences must be >= 1, got " + maxSequences);
        }
        if (maxQueue < 0) {
            throw new IllegalArgumentException("max queue must be >= 0, got " + maxQueue);
        }
        if (prefillChunk < 1) {
            throw new IllegalArgumentException("prefill chunk must be >= 1, got " + prefillChunk);
        }
    }

    public static SchedulerConfig defaults() {
        return new SchedulerConfig(16, 64, 512);
    }
}
