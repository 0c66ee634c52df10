package io.moe4j.backend.cpu;

import io.moe4j.routing.Router;

/**
 * The router's logits in plain Java, where the Vector API is missing or {@code -Dmoe4j.cpu.scalar=true}. Kept
 * rather than handing back the host router: the four partial sums of the lane order are independent chains (the
 * host's one chain waits on each add), each token is widened to double once, pairs of experts share it and pairs
 * of tokens share each widened weight (1.6-2x the host's speed at T = 1, ~2.2x at T = 16, CpuRouterBench); and
 * the choices are those of the vector kernels to the bit, so a layer routes the same with or without the Vector API.
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
        double[] wide = new double[Math.min(tokens, 2) * hidden];
        int t = 0;
        for (; t + 2 <= tokens; t += 2) {
            for (int i = 0; i < wide.length; i++) {
                wide[i] = x[t * hidden + i];
            }
            for (int e = 0; e < experts; e++) {
                twoTokens(x, t, e, wide, out);
            }
        }
        if (t < tokens) {
            for (int i = 0; i < hidden; i++) {
                wide[i] = x[t * hidden + i];
            }
            int e = 0;
            for (; e + 2 <= experts; e += 2) {
                twoExperts(x, t, e, wide, out);
            }
            if (e < experts) {
                out[t * experts + e] = dot(x, t * hidden, e);
            }
        }
    }

    /** Experts e and e+1 for token t, whose row is widened in wide: eight chains. */
    private void twoExperts(float[] x, int t, int e, double[] wide, double[] out) {
        int r = e * hidden;
        int q = r + hidden;
        int whole = hidden & -LANES;
        double a0 = 0;
        double a1 = 0;
        double a2 = 0;
        double a3 = 0;
        double b0 = 0;
        double b1 = 0;
        double b2 = 0;
        double b3 = 0;
        for (int c = 0; c < whole; c += LANES) {
            a0 += (double) weight[r + c] * wide[c];
            a1 += (double) weight[r + c + 1] * wide[c + 1];
            a2 += (double) weight[r + c + 2] * wide[c + 2];
            a3 += (double) weight[r + c + 3] * wide[c + 3];
            b0 += (double) weight[q + c] * wide[c];
            b1 += (double) weight[q + c + 1] * wide[c + 1];
            b2 += (double) weight[q + c + 2] * wide[c + 2];
            b3 += (double) weight[q + c + 3] * wide[c + 3];
        }
        out[t * experts + e] = finish(a0, a1, a2, a3, x, t * hidden, e);
        out[t * experts + e + 1] = finish(b0, b1, b2, b3, x, t * hidden, e + 1);
    }

    /** Expert e for tokens t and t+1, whose rows are widened in wide: eight chains, each weight widened once. */
    private void twoTokens(float[] x, int t, int e, double[] wide, double[] out) {
        int row = e * hidden;
        int whole = hidden & -LANES;
        int b = hidden;
        double a0 = 0;
        double a1 = 0;
        double a2 = 0;
        double a3 = 0;
        double b0 = 0;
        double b1 = 0;
        double b2 = 0;
        double b3 = 0;
        for (int c = 0; c < whole; c += LANES) {
            double w0 = weight[row + c];
            double w1 = weight[row + c + 1];
            double w2 = weight[row + c + 2];
            double w3 = weight[row + c + 3];
            a0 += w0 * wide[c];
            a1 += w1 * wide[c + 1];
            a2 += w2 * wide[c + 2];
            a3 += w3 * wide[c + 3];
            b0 += w0 * wide[b + c];
            b1 += w1 * wide[b + c + 1];
            b2 += w2 * wide[b + c + 2];
            b3 += w3 * wide[b + c + 3];
        }
        out[t * experts + e] = finish(a0, a1, a2, a3, x, t * hidden, e);
        out[(t + 1) * experts + e] = finish(b0, b1, b2, b3, x, (t + 1) * hidden, e);
    }
}
