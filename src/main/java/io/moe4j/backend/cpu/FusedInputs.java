package io.moe4j.backend.cpu;

/**
 * A single token prepared for the fused kernels ({@link FusedGemv}), which multiply the lane words' float bits
 * as they are, value·2^-bias, without rescaling each weight: the input is scaled by 2^K instead (exact, a power of
 * two) so that the products stay in float's normal range, and the sum is scaled back by 2^(bias−K) once per row.
 *
 * @see LaneCodec#bias()
 */
final class FusedInputs extends Inputs {
    /** The gathered input times 2^K. */
    final float[] scaled;
    /** Per segment: Σ of the segment's inputs times 2^(K−bias), for the integer codes' offset and zero points. */
    final float[] segmentSums;
    /** 2^(bias−K). */
    final float post;

    private FusedInputs(Inputs in, float[] scaled, float[] segmentSums, float post) {
        super(in.n, in.padded, in.x);
        this.scaled = scaled;
        this.segmentSums = segmentSums;
        this.post = post;
    }

    static FusedInputs of(PanelMatrix m, int expert, Inputs in) {
        if (in.n != 1) {
            throw new IllegalArgumentException("fused inputs are for one token, not " + in.n);
        }
        int bias = m.codec().bias();
        float amax = 0f;
        for (float v : in.x) {
            amax = Math.max(amax, Math.abs(v));
        }
        // Largest input near 2^(bias−5), at most 2^126: with codes below 2^5 the products stay below 1 and far above
        // float's subnormals for any input within 2^-100 of the largest. NaN and infinity pass through as they are.
        int exp = amax == 0f || !Float.isFinite(amax) ? 0 : Math.getExponent(amax);
        int k = Math.clamp(Math.min(bias - 6, 125) - exp, bias - 127, 127);
        float up = Math.scalb(1f, k);
        float[] scaled = new float[in.padded];
        for (int i = 0; i < in.padded; i++) {
            scaled[i] = in.x[i] * up;
        }
        float[] sums = null;
        if (m.codec().offset() != 0) {
            ColumnPlan plan = m.plan(expert);
            int slots = plan.slots();
            sums = new float[plan.segments()];
            for (int g = 0; g < sums.length; g++) {
                float s = 0f;
                for (int i = plan.segmentWords()[g] * slots; i < plan.segmentWords()[g + 1] * slots; i++) {
                    s += in.x[i];
                }
                sums[g] = Math.scalb(s, k - bias);
            }
        }
        return new FusedInputs(in, scaled, sums, Math.scalb(1f, bias - k));
    }
}
