package io.moe4j.backend.cpu;

import io.moe4j.routing.Router;
import io.moe4j.routing.Routing;
import io.moe4j.routing.TokenRouter;

/**
 * A layer's {@link Router} for the cpu backend: the float64 logits from {@link RouterLogits} (Vector API or plain
 * Java, chosen like the experts' kernels), then the host router's own selection. The host computes each logit as
 * one serial chain of adds over H (gpt-oss ~90 us a token, DeepSeek-V3 ~1.8 ms), longer than the experts in some
 * cases. Single-threaded, so the logits cannot depend on a thread count: at ~8 GMAC/s, DeepSeek-V3's router at 256
 * tokens (470 M multiply-adds, ~60 ms) is a few percent of its experts' ~90 G, and router threads would compete with
 * the experts' pool for the same cores. Thread-safe and immutable.
 */
final class CpuRouter implements TokenRouter {
    private final Router router;
    private final RouterLogits logits;

    CpuRouter(Router router, RouterLogits logits) {
        this.router = router;
        this.logits = logits;
    }

    @Override
    public Routing route(float[] x, int tokens) {
        return router.select(logits(x, tokens), tokens);
    }

    /** The logits [T, E], bias added: the host router's within the rounding of another summation order. */
    double[] logits(float[] x, int tokens) {
        router.checkInput(x, tokens);
        double[] out = new double[tokens * router.spec().numExperts()];
        logits.compute(x, tokens, out);
        return out;
    }

    /** "vector" or "scalar". */
    String kernels() {
        return logits.name();
    }

    @Override
    public String where() {
        return logits.name().equals("vector") ? "cpu (Vector API, float64 logits)"
                : "cpu (scalar Java, float64 logits)";
    }
}
