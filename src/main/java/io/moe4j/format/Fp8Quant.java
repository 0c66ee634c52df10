package io.moe4j.format;

/**
 * FP8 E4M3 activation quantize-dequantize, as the conformance references apply it to GEMM inputs: the value is
 * divided by a float32 scale, clamped to ±448, rounded to E4M3 (half to even) and multiplied back.
 */
public final class Fp8Quant {
    public static final float E4M3_MAX = 448f;
    /** The floor of a dynamic per-token scale: 1 / (448 · 512), so an all-zero token does not divide by zero. */
    public static final float MIN_TOKEN_SCALE = 1f / (448f * 512f);
    /** The floor of a group's amax in block FP8. */
    public static final float MIN_GROUP_AMAX = 1e-10f;

    private static final float[] E4M3 = ElementFormat.E4M3FN.table();

    private Fp8Quant() {}

    /** e4m3(clamp(x / s, ±448)) · s over x[off, off+len). */
    public static void qdqStatic(float[] x, int off, int len, float scale) {
        for (int i = off, end = off + len; i < end; i++) {
            // encode clamps to ±448 itself, which is the reference's explicit clamp.
            x[i] = E4M3[ElementFormat.E4M3FN.encode(x[i] / scale)] * scale;
        }
    }

    /** The dynamic per-token scale max(amax / 448, 1 / (448 · 512)). */
    public static float perTokenScale(float[] x, int off, int len) {
        return Math.max(Nvfp4Codec.absMax(x, off, len) / E4M3_MAX, MIN_TOKEN_SCALE);
    }

    /** One token x[off, off+len) with its dynamic scale; returns the scale used. */
    public static float qdqPerToken(float[] x, int off, int len) {
        float scale = perTokenScale(x, off, len);
        qdqStatic(x, off, len, scale);
        return scale;
    }

    /** Block FP8 activations: each run of {@code group} channels of x[off, off+len) gets max(amax, 1e-10) / 448. */
    public static void qdqGroup(float[] x, int off, int len, int group) {
        if (group <= 0) {
            throw new IllegalArgumentException("group must be positive: " + group);
        }
        for (int g = off, end = off + len; g < end; g += group) {
            int n = Math.min(group, end - g);
            float scale = Math.max(Nvfp4Codec.absMax(x, g, n), MIN_GROUP_AMAX) / E4M3_MAX;
            qdqStatic(x, g, n, scale);
        }
    }
}
