package io.moe4j.backend.cpu;

import io.moe4j.routing.Router;

/**
 * The router's logits in plain Java, where the Vector API is missing or {@code -Dmoe4j.cpu.scalar=true}. Kept
 * rather than handing back the host router: the four partial sums of the lane order are four independent chains
 * (the host's single chain waits on each add), and the choices are those of the vector kernels to the bit, so a
 * layer routes the same with or without the Vector API.
 */
final class ScalarRouterLogits extends RouterLogits {

    ScalarRouterLogits(Router router) {
        super(router);
    }

    @Override
    String name() {
        return "scalar";
    }

    @Override
    void compute(float[] x, int tokens, double[] out) {
        for (int t = 0; t < tokens; t++) {
            for (int e = 0; e < experts; e++) {
                out[t * experts + e] = dot(x, t * hidden, e);
            }
        }
    }
}
