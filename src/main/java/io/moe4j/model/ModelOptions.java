package io.moe4j.model;

import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.oracle.BackendRegistry;

/**
 * How to load and run a model.
 *
 * @param backend      where the layers run: {@code emulation} (exact float reference), {@code cpu}, or {@code cuda}
 *                     (the whole decoder resident on the GPU; what its kernels cannot take is refused by name)
 * @param threads      CPU worker threads
 * @param contextLimit the most positions a session may hold, 0 for the model's {@code max_position_embeddings}
 *                     (a larger value is capped there)
 * @param linears      where the attention, dense MLP and lm_head linears come from
 * @param kernelActivations the precision the MoE experts' kernels multiply activations in ({@code --activations});
 *                     {@link KernelActivations#INT8} only on a backend whose kernels compute with it
 *                     ({@code Backend.computesWith}: cpu)
 * @param loadListener told after each layer loads (a command's progress bar); {@link LoadListener#NONE} by default
 * @param gpus         the GPUs a {@code cuda} model spreads its routed experts over (expert parallelism); 1 by default,
 *                     more only on {@code cuda}
 */
public record ModelOptions(String backend, int threads, int contextLimit, LinearProvider linears,
                           KernelActivations kernelActivations, LoadListener loadListener, int gpus) {
    /** The backend that puts the whole decoder on the GPU. */
    public static final String CUDA = "cuda";

    /** The backends a whole model runs on. */
    public static final java.util.List<String> BACKENDS = java.util.List.of("emulation", "cpu", CUDA);

    public ModelOptions {
        if (!BACKENDS.contains(backend)) {
            throw new IllegalArgumentException("backend '" + backend + "' does not run whole models (one of " + BACKENDS + ")");
        }
        if (threads <= 0) {
            throw new IllegalArgumentException("threads must be positive, got " + threads);
        }
        if (contextLimit < 0) {
            throw new IllegalArgumentException("contextLimit must be 0 (the model's) or positive, got " + contextLimit);
        }
        if (linears == null) {
            throw new IllegalArgumentException("linears must be given");
        }
        if (kernelActivations == null) {
            throw new IllegalArgumentException("kernelActivations must be given (KernelActivations.FLOAT by default)");
        }
        if (loadListener == null) {
            throw new IllegalArgumentException("loadListener must be given (LoadListener.NONE by default)");
        }
        if (gpus < 1) {
            throw new IllegalArgumentException("gpus must be at least 1, got " + gpus);
        }
        if (gpus > 1 && !CUDA.equals(backend)) {
            throw new IllegalArgumentException("--gpus " + gpus + " spreads experts over GPUs: it needs --backend "
                    + CUDA + ", not " + backend);
        }
        if (kernelActivations != KernelActivations.FLOAT) {
            // The experts run on the layer backend of the same name: its own rule says what it computes with.
            BackendRegistry layers = BackendRegistry.standard();
            if (!layers.computesWith(backend, kernelActivations)) {
                throw new IllegalArgumentException("--activations " + kernelActivations + " runs on backend "
                        + String.join(" or ", layers.computingWith(kernelActivations)) + " only, not " + backend
                        + " (its experts multiply activations in float)");
            }
        }
    }

    /** Options whose experts multiply activations in float. */
    public ModelOptions(String backend, int threads, int contextLimit, LinearProvider linears) {
        this(backend, threads, contextLimit, linears, KernelActivations.FLOAT, LoadListener.NONE, 1);
    }

    /** The cpu backend on every core, the model's own context limit, unquantized linears. */
    public static ModelOptions defaults() {
        return new ModelOptions("cpu", Runtime.getRuntime().availableProcessors(), 0, io.moe4j.model.linear.Linears::factory);
    }

    public ModelOptions withBackend(String b) {
        return new ModelOptions(b, threads, contextLimit, linears, kernelActivations, loadListener, gpus);
    }

    public ModelOptions withThreads(int t) {
        return new ModelOptions(backend, t, contextLimit, linears, kernelActivations, loadListener, gpus);
    }

    public ModelOptions withContextLimit(int limit) {
        return new ModelOptions(backend, threads, limit, linears, kernelActivations, loadListener, gpus);
    }

    public ModelOptions withKernelActivations(KernelActivations k) {
        return new ModelOptions(backend, threads, contextLimit, linears, k, loadListener, gpus);
    }

    public ModelOptions withLinears(LinearProvider provider) {
        return new ModelOptions(backend, threads, contextLimit, provider, kernelActivations, loadListener, gpus);
    }

    public ModelOptions withLoadListener(LoadListener listener) {
        return new ModelOptions(backend, threads, contextLimit, linears, kernelActivations, listener, gpus);
    }

    public ModelOptions withGpus(int n) {
        return new ModelOptions(backend, threads, contextLimit, linears, kernelActivations, loadListener, n);
    }
}
