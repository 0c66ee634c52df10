package io.moe4j.bench;

import io.moe4j.routing.Router;
import io.moe4j.routing.RouterKind;
import io.moe4j.routing.RouterSpec;

import java.util.List;
import java.util.SplittableRandom;

/**
 * A model family's router shape for the router benchmarks (CpuRouterBench, CudaRouterBench), with random weights of
 * the scales real routers have: gpt-oss's logit bias, DeepSeek-V3's small selection-only correction bias.
 */
public record RouterPreset(String name, RouterSpec spec, int hidden) {

    public static List<RouterPreset> families() {
        return List.of(
                new RouterPreset("gpt-oss-20b", new RouterSpec(RouterKind.TOPK_SOFTMAX, 32, 4, true, 1, 1, 1.0), 2880),
                new RouterPreset("qwen3-30b-a3b", RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 128, 8, true), 2048),
                new RouterPreset("deepseek-v3",
                        new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 256, 8, true, 8, 4, 2.5), 7168));
    }

    /** A host router of this shape with Gaussian weights drawn from {@code rnd}. */
    public Router randomRouter(SplittableRandom rnd) {
        int e = spec.numExperts();
        return new Router(spec, hidden, gaussian(rnd, e * hidden, 0.02),
                spec.kind() == RouterKind.TOPK_SOFTMAX ? gaussian(rnd, e, 0.5) : null,
                spec.kind() == RouterKind.SIGMOID_GROUPED_TOPK ? gaussian(rnd, e, 0.01) : null);
    }

    public static float[] gaussian(SplittableRandom rnd, int n, double scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * scale);
        }
        return v;
    }
}
