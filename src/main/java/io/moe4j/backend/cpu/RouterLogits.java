package io.moe4j.backend.cpu;

import io.moe4j.routing.Router;

/**
 * A router's float64 logits for {@link CpuRouter}, one implementation per instruction set as for {@link CpuKernels}.
 *
 * <p>Every product of two floats is exact in double, so these sums differ from the host router's only in the order
 * of the additions. Each token-expert dot product is summed in the <em>lane order</em>: four partial sums, sum j
 * over the columns c = j (mod 4) below the last whole group of four, each in column order; folded as
 * ((s0 + s1) + s2) + s3; then the last H mod 4 columns in order; then the bias. The order depends on nothing but H:
 * not on the batch, the tile a pair falls in, the thread, or the instruction set, so the scalar and vector logits
 * are bit-identical and a token routes the same alone or in a batch.
 *
 * <p>The weights are a copy in which no value is a float subnormal (whose widening or product Intel cores would run
 * through microcode assists): a row holding one is multiplied by a power of two 2^d that makes its smallest weight
 * normal, and its sum by 2^-d at the end. Both are exact in float64 (every product of two floats, and every partial
 * sum scaled by a power of two, stays far inside its range), so the logits are the same to the bit.
 */
abstract class RouterLogits {
    /** The lanes of the lane order: four float64 lanes, one 256-bit vector. */
    static final int LANES = 4;

    final int experts;
    final int hidden;
    final float[] weight;
    final float[] bias;
    /** Per expert: 2^-d where its weight row was multiplied by 2^d (1 for rows without subnormals). */
    final double[] unscale;

    RouterLogits(Router router) {
        this.experts = router.spec().numExperts();
        this.hidden = router.hidden();
        this.weight = router.weight();
        this.bias = router.bias();
        this.unscale = new double[experts];
        for (int e = 0; e < experts; e++) {
            unscale[e] = normalizeRow(weight, e * hidden, hidden);
        }
    }

    /**
     * Multiplies w[from, from + n) by the power of two 2^d that makes its smallest non-zero magnitude at least
     * {@link Float#MIN_NORMAL} (d = 0 when it already is) and returns 2^-d. A row whose largest weight would then
     * overflow (a range over 2^253) keeps its largest weights finite and has its remaining subnormals set to zero:
     * each is below 2^-253 of the row's largest weight, beneath a float64 sum's rounding.
     */
    static double normalizeRow(float[] w, int from, int n) {
        int minExp = Integer.MAX_VALUE;
        int maxExp = Integer.MIN_VALUE;
        for (int i = from; i < from + n; i++) {
            if (w[i] != 0f && Float.isFinite(w[i])) {
                // The exponent of the float64 value, exact for subnormal floats too (Math.getExponent(float) says -127).
                int exp = Math.getExponent((double) w[i]);
                minExp = Math.min(minExp, exp);
                maxExp = Math.max(maxExp, exp);
            }
        }
        if (minExp == Integer.MAX_VALUE || minExp >= Float.MIN_EXPONENT) {
            return 1.0;
        }
        int d = Math.min(Float.MIN_EXPONENT - minExp, Float.MAX_EXPONENT - maxExp);
        for (int i = from; i < from + n; i++) {
            float v = Math.scalb(w[i], d);
            w[i] = Math.abs(v) < Float.MIN_NORMAL ? Math.copySign(0f, v) : v;
        }
        return Math.scalb(1.0, -d);
    }

    /** "vector" or "scalar". */
    abstract String name();

    /** out[t·E + e] = the logit of expert e for row t of x, for t < tokens (the caller checked x's length). */
    abstract void compute(float[] x, int tokens, double[] out);

    /** One logit in the lane order, in plain Java: the definition, and both kernels' odd expert. */
    final double dot(float[] x, int xOff, int e) {
        int row = e * hidden;
        int whole = hidden & -LANES;
        double s0 = 0;
        double s1 = 0;
        double s2 = 0;
        double s3 = 0;
        for (int c = 0; c < whole; c += LANES) {
            s0 += (double) weight[row + c] * x[xOff + c];
            s1 += (double) weight[row + c + 1] * x[xOff + c + 1];
            s2 += (double) weight[row + c + 2] * x[xOff + c + 2];
            s3 += (double) weight[row + c + 3] * x[xOff + c + 3];
        }
        return finish(s0, s1, s2, s3, x, xOff, e);
    }

    /** The end of a dot product in the lane order: the four lanes folded, the last columns, the row's 2^-d, the bias. */
    final double finish(double s0, double s1, double s2, double s3, float[] x, int xOff, int e) {
        int row = e * hidden;
        double acc = ((s0 + s1) + s2) + s3;
        for (int c = hidden & -LANES; c < hidden; c++) {
            acc += (double) weight[row + c] * x[xOff + c];
        }
        return acc * unscale[e] + (bias == null ? 0 : bias[e]);
    }
}
