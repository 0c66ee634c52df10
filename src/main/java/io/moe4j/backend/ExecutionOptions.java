package io.moe4j.backend;

/**
 * How a backend may run.
 *
 * @param threads     worker threads for the CPU paths (≥ 1)
 * @param activations the precision the kernels multiply activations in ({@link KernelActivations#FLOAT} unless asked)
 */
public record ExecutionOptions(int threads, KernelActivations activations) {
    public ExecutionOptions {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        if (activations == null) {
            throw new IllegalArgumentException("activations must be given (KernelActivations.FLOAT by default)");
        }
    }

    /** Float activations on this many threads. */
    public ExecutionOptions(int threads) {
        this(threads, KernelActivations.FLOAT);
    }

    public static ExecutionOptions defaults() {
        return new ExecutionOptions(Runtime.getRuntime().availableProcessors());
    }
}
