package io.moe4j.backend;

/**
 * How a backend may run.
 *
 * @param threads     worker threads for the CPU paths (≥ 1)
 * @param workers     the threads to run CPU loops on, shared with the rest of a model and not closed by the backend;
 *                    null to let the backend start its own {@code threads} workers for what it prepares
 * @param activations the precision the kernels multiply activations in ({@link KernelActivations#FLOAT} unless asked)
 * @param device      the ordinal of the accelerator a device backend prepares on (0 unless asked: expert
 *                    parallelism places each slice of a layer's experts on a device of its own); CPU backends ignore it
 */
public record ExecutionOptions(int threads, Workers workers, KernelActivations activations, int device) {
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
        if (device < 0) {
            throw new IllegalArgumentException("device must be a device ordinal (0 or more), got " + device);
        }
    }

    /** On device 0. */
    public ExecutionOptions(int threads, Workers workers, KernelActivations activations) {
        this(threads, workers, activations, 0);
    }

    /** Float activations; the backend starts its own {@code threads} workers. */
    public ExecutionOptions(int threads) {
        this(threads, null, KernelActivations.FLOAT);
    }

    /** Activations in {@code activations}; the backend starts its own {@code threads} workers. */
    public ExecutionOptions(int threads, KernelActivations activations) {
        this(threads, null, activations);
    }

    /** The same options on device {@code ordinal}. */
    public ExecutionOptions onDevice(int ordinal) {
        return new ExecutionOptions(threads, workers, activations, ordinal);
    }

    public static ExecutionOptions defaults() {
        return new ExecutionOptions(Runtime.getRuntime().availableProcessors());
    }
}
