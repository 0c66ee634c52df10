package io.moe4j.format;

/** INT8 activation quantize-dequantize: rint (half to even) of x / s, clamped to [-128, 127]. */
public final class Int8Quant {
    public static final float MIN_AMAX = 1e-10f;

    private Int8Quant() {}

    /** (clamp(rint(x / s) + zp, -128, 127) - zp) · s over x[off, off+len). */
    public static void qdqStatic(float[] x, int off, int len, float scale, int zeroPoint) {
        if (zeroPoint == 0) {
            // Kept apart so that -0 survives: adding a zero point of 0 would turn rint's -0 into +0, and the
            // symmetric reference (the goldens) keeps the sign.
            for (int i = off, end = off + len; i < end; i++) {
                x[i] = Math.clamp((float) Math.rint(x[i] / scale), -128f, 127f) * scale;
            }
            return;
        }
        for (int i = off, end = off + len; i < end; i++) {
            // rint on the float quotient: widening to double is exact, so this is float32 half-to-even rounding.
            float q = Math.clamp((float) Math.rint(x[i] / scale) + zeroPoint, -128f, 127f);
            x[i] = (q - zeroPoint) * scale;
        }
    }

    /** The int8 code of x / s + zp: clamp(rint(x / s) + zp, -128, 127). */
    public static int quantize(float x, float scale, int zeroPoint) {
        return (int) Math.clamp((float) Math.rint(x / scale) + zeroPoint, -128f, 127f);
    }

    /** The dynamic per-token scale max(amax, 1e-10) / 127. */
    public static float perTokenScale(float[] x, int off, int len) {
        return Math.max(Nvfp4Codec.absMax(x, off, len), MIN_AMAX) / 127f;
    }

    /** One token x[off, off+len) with its dynamic symmetric scale; returns the scale used. */
    public static float qdqPerToken(float[] x, int off, int len) {
        float scale = perTokenScale(x, off, len);
        qdqStatic(x, off, len, scale, 0);
        return scale;
    }
}
