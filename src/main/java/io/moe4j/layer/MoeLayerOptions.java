package io.moe4j.layer;

import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Workers;

/**
 * How to load and run a layer.
 *
 * @param backend       {@code auto}, a moe4j backend name or a vLLM {@code --moe-backend} string
 * @param threads       CPU worker threads
 * @param localExperts  global ids of the experts held here (expert parallelism), or null for all
 * @param platform      the machine to decide for, or null to probe this one
 * @param sharedExperts which layer of an expert-parallel set adds the shared experts (those that have them)
 * @param workers       a model's shared CPU workers ({@code threads} of them), not closed with the layer; null for
 *                      a layer that starts its own
 * @param kernelActivations the precision the experts' kernels multiply activations in ({@code --activations});
 *                      {@link KernelActivations#INT8} runs only where a backend offers it for the scheme
 * @param device        the accelerator a device backend puts the layer on (0 unless asked: expert parallelism puts
 *                      each slice of the experts on a device of its own)
 * @param backendSource who named {@code backend}, as the oracle's log line says it ({@code --backend} unless set: a
 *                      whole model names its own backend for its layers)
 */
public record MoeLayerOptions(String backend, int threads, int[] localExperts, Platform platform,
                              SharedExperts sharedExperts, Workers workers,
                              KernelActivations kernelActivations, int device, String backendSource) {

    /** Options whose backend the command line named. */
    public MoeLayerOptions(String backend, int threads, int[] localExperts, Platform platform,
                           SharedExperts sharedExperts, Workers workers, KernelActivations kernelActivations,
                           int device) {
        this(backend, threads, localExperts, platform, sharedExperts, workers, kernelActivations, device, "--backend");
    }

    public MoeLayerOptions {
        if (sharedExperts == null) {
            throw new IllegalArgumentException("sharedExperts must be given (SharedExperts.WITH_EXPERT_ZERO by default)");
        }
        if (workers != null && workers.threads() != threads) {
            throw new IllegalArgumentException("threads is " + threads + " but the shared workers have "
                    + workers.threads());
        }
        if (kernelActivations == null) {
            throw new IllegalArgumentException("kernelActivations must be given (KernelActivations.FLOAT by default)");
        }
        if (device < 0) {
            throw new IllegalArgumentException("device must be a device ordinal (0 or more), got " + device);
        }
    }

    /** Options for device 0. */
    public MoeLayerOptions(String backend, int threads, int[] localExperts, Platform platform,
                           SharedExperts sharedExperts, Workers workers, KernelActivations kernelActivations) {
        this(backend, threads, localExperts, platform, sharedExperts, workers, kernelActivations, 0);
    }

    /** Options for a layer that starts its own workers, with float kernel activations. */
    public MoeLayerOptions(String backend, int threads, int[] localExperts, Platform platform,
                           SharedExperts sharedExperts) {
        this(backend, threads, localExperts, platform, sharedExperts, null, KernelActivations.FLOAT);
    }

    /** Options without a shared-expert choice: the layer holding expert 0 adds them. */
    public MoeLayerOptions(String backend, int threads, int[] localExperts, Platform platform) {
        this(backend, threads, localExperts, platform, SharedExperts.WITH_EXPERT_ZERO);
    }

    public static MoeLayerOptions defaults() {
        return new MoeLayerOptions("auto", Runtime.getRuntime().availableProcessors(), null, null);
    }

    /** The backend {@code b}, named by {@code source} (for the oracle's log line). */
    public MoeLayerOptions withBackend(String b, String source) {
        return new MoeLayerOptions(b, threads, localExperts, platform, sharedExperts, workers, kernelActivations,
                device, source);
    }

    public MoeLayerOptions withBackend(String b) {
        return new MoeLayerOptions(b, threads, localExperts, platform, sharedExperts, workers, kernelActivations,
                device, backendSource);
    }

    public MoeLayerOptions withThreads(int t) {
        return new MoeLayerOptions(backend, t, localExperts, platform, sharedExperts,
                workers != null && workers.threads() == t ? workers : null, kernelActivations, device, backendSource);
    }

    public MoeLayerOptions withLocalExperts(int[] experts) {
        return new MoeLayerOptions(backend, threads, experts, platform, sharedExperts, workers, kernelActivations,
                device, backendSource);
    }

    public MoeLayerOptions withPlatform(Platform p) {
        return new MoeLayerOptions(backend, threads, localExperts, p, sharedExperts, workers, kernelActivations,
                device, backendSource);
    }

    public MoeLayerOptions withSharedExperts(SharedExperts s) {
        return new MoeLayerOptions(backend, threads, localExperts, platform, s, workers, kernelActivations, device,
                backendSource);
    }

    /** The same options on a model's shared workers (their count becomes {@code threads}). */
    public MoeLayerOptions withWorkers(Workers w) {
        return new MoeLayerOptions(backend, w == null ? threads : w.threads(), localExperts, platform, sharedExperts, w,
                kernelActivations, device, backendSource);
    }

    /** The same options with the experts' kernels multiplying activations in {@code k}. */
    public MoeLayerOptions withKernelActivations(KernelActivations k) {
        return new MoeLayerOptions(backend, threads, localExperts, platform, sharedExperts, workers, k, device,
                backendSource);
    }

    /** The same options with the layer on device {@code ordinal} (for device backends). */
    public MoeLayerOptions withDevice(int ordinal) {
        return new MoeLayerOptions(backend, threads, localExperts, platform, sharedExperts, workers, kernelActivations,
                ordinal, backendSource);
    }

    /** Whether a layer loaded with these options adds its shared experts to its output. */
    public boolean addsSharedExperts() {
        return sharedExperts.addedBy(localExperts);
    }
}
