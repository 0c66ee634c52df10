package io.moe4j.layer;

import io.moe4j.backend.Platform;

/**
 * How to load and run a layer.
 *
 * @param backend      {@code auto}, a moe4j backend name or a vLLM {@code --moe-backend} string
 * @param threads      CPU worker threads
 * @param localExperts global ids of the experts held here (expert parallelism), or null for all
 * @param platform     the machine to decide for, or null to probe this one
 */
public record MoeLayerOptions(String backend, int threads, int[] localExperts, Platform platform) {

    public static MoeLayerOptions defaults() {
        return new MoeLayerOptions("auto", Runtime.getRuntime().availableProcessors(), null, null);
    }

    public MoeLayerOptions withBackend(String b) {
        return new MoeLayerOptions(b, threads, localExperts, platform);
    }

    public MoeLayerOptions withThreads(int t) {
        return new MoeLayerOptions(backend, t, localExperts, platform);
    }

    public MoeLayerOptions withLocalExperts(int[] experts) {
        return new MoeLayerOptions(backend, threads, experts, platform);
    }

    public MoeLayerOptions withPlatform(Platform p) {
        return new MoeLayerOptions(backend, threads, localExperts, p);
    }
}
