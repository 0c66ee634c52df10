package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * A few tokens prepared for the fused kernels ({@link FusedGemv}), which multiply the lane words' float bits
 * as they are, value·2^-bias, without rescaling each weight: each token's input is scaled by 2^K instead (exact, a
 * power of two) so that the products stay in float's normal range, and its sums are scaled back by 2^(bias−K) once
 * per row.
 *
 * @see LaneCodec#bias()
 */
final class FusedInputs extends Inputs {
    private static final VectorSpecies<Float> F = VectorShapes.F;

    /** Per token: the gathered input times its 2^K. */
    final float[][] scaled;
    /**
     * Per token and segment: Σ of the segment's inputs times 2^(K−bias), for the integer codes' offset and zero
     * points; null for the floats.
     */
    final float[][] segmentSums;
    /** Per token: 2^(bias−K). */
    final float[] post;

    private FusedInputs(Inputs in, float[][] scaled, float[][] segmentSums, float[] post) {
        super(in.n, in.padded, in.x);
        this.scaled = scaled;
        this.segmentSums = segmentSums;
        this.post = post;
    }

    static FusedInputs of(PanelMatrix m, int expert, Inputs in) {
        int bias = m.codec().bias();
        int padded = in.padded;
        ColumnPlan plan = m.plan(expert);
        int segments = plan.segments();
        float[][] scaled = new float[in.n][padded];
        float[][] sums = m.codec().offset() != 0 ? new float[in.n][segments] : null;
        float[] post = new float[in.n];
        float[] lanes = new float[F.length()];
        for (int t = 0; t < in.n; t++) {
            int xb = t * padded;
            float amax = absMax(in.x, xb, padded);
            // Largest input near 2^(bias−5), at most 2^126: with decoded slots (value·2^-bias, normal, LaneCodec)
            // below 2^(16−bias) (E5M2 and F16 reach 57344 and 65504) the products stay below 2^11, and inputs within
            // 2^-100 of the largest stay normal floats, as do their products. NaN and infinity pass through.
            int exp = amax == 0f || !Float.isFinite(amax) ? 0 : Math.getExponent(amax);
            int k = Math.clamp(Math.min(bias - 6, 125) - exp, bias - 127, 127);
            scale(in.x, xb, padded, Math.scalb(1f, k), scaled[t]);
            post[t] = Math.scalb(1f, bias - k);
            if (sums != null) {
                int slots = plan.slots();
                for (int g = 0; g < segments; g++) {
                    float s = sum(in.x, xb + plan.segmentWords()[g] * slots, xb + plan.segmentWords()[g + 1] * slots,
                            lanes);
                    sums[t][g] = Math.scalb(s, k - bias);
                }
            }
        }
        return new FusedInputs(in, scaled, sums, post);
    }

    /**
     * max |x[from + i]| for i &lt; n, NaN if any is NaN; lane-wise (abs and max only: no arithmetic, so subnormal
     * inputs cost nothing here). Serial chains of {@code Math.max} and of a sum over 2048 floats took 7.8 µs together
     * on the Zen 5 VM (a scratch loop): the fused kernel multiplies about 130 rows of 2048 columns in that time.
     * Here, not in {@link Inputs}, which the scalar kernels use on a JVM without the Vector API; {@link Q8Inputs}
     * shares it.
     */
    static float absMax(float[] x, int from, int n) {
        FloatVector acc = FloatVector.zero(F);
        int i = 0;
        for (int end = F.loopBound(n); i < end; i += F.length()) {
            acc = acc.max(FloatVector.fromArray(F, x, from + i).abs());
        }
        float amax = acc.reduceLanes(VectorOperators.MAX);
        for (; i < n; i++) {
            amax = Math.max(amax, Math.abs(x[from + i]));
        }
        return amax;
    }

    /** out[i] = x[from + i] · up for i &lt; n (up a power of two: exact). */
    private static void scale(float[] x, int from, int n, float up, float[] out) {
        int i = 0;
        for (int end = F.loopBound(n); i < end; i += F.length()) {
            FloatVector.fromArray(F, x, from + i).mul(up).intoArray(out, i);
        }
        for (; i < n; i++) {
            out[i] = x[from + i] * up;
        }
    }

    /**
     * Σ x[from, to): lane-wise partial sums, then the lanes and the tail added in index order, so the result is the
     * same whichever way the JIT compiled it ({@code reduceLanes(ADD)} leaves the order open).
     */
    private static float sum(float[] x, int from, int to, float[] lanes) {
        FloatVector acc = FloatVector.zero(F);
        int i = from;
        for (int end = from + F.loopBound(to - from); i < end; i += F.length()) {
            acc = acc.add(FloatVector.fromArray(F, x, i));
        }
        acc.intoArray(lanes, 0);
        float s = 0f;
        for (float v : lanes) {
            s += v;
        }
        for (; i < to; i++) {
            s += x[i];
        }
        return s;
    }
}
