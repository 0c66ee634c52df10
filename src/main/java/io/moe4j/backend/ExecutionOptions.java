package io.moe4j.backend;

/**
 * How a backend may run.
 *
 * @param threads worker threads for the CPU paths (≥ 1)
 */
public record ExecutionOptions(int threads) {
    public ExecutionOptions {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
    }

    public static ExecutionOptions defaults() {
        return new ExecutionOptions(Runtime.getRuntime().availableProcessors());
    }
}
