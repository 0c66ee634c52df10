package io.moe4j.backend;

/**
 * How a backend may run.
 *
 * @param threads     worker threads for the CPU paths (≥ 1)
 * @param workers     the threads to run CPU loops on, shared with the rest of a model and not closed by the backend;
 *                    null to let the backend start its own {@code threads} workers for what it prepares
 * @param activations the precision the kernels multiply activations in ({@link KernelActivations#FLOAT} unless asked)
 */
public record ExecutionOptions(int threads, Workers workers, KernelActivations activations) {
    public ExecutionOptions {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        if (workers != null && workers.threads() != threads) {
            throw new IllegalArgumentException("threads is " + threads + " but the shared workers have "
                    + workers.threads());
        }
        if (activations == null) {
            throw new IllegalArgumentException("activations must be given (KernelActivations.FLOAT by default)");
        }
    }

    /** Float activations; the backend starts its own {@code threads} workers. */
    public ExecutionOptions(int threads) {
        this(threads, null, KernelActivations.FLOAT);
    }

    /** Activations in {@code activations}; the backend starts its own {@code threads} workers. */
    public ExecutionOptions(int threads, KernelActivations activations) {
        this(threads, null, activations);
    }

    public static ExecutionOptions defaults() {
        return new ExecutionOptions(Runtime.getRuntime().availableProcessors());
    }
}
