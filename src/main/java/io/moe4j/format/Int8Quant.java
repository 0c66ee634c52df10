package io.moe4j.format;

/**
 * INT8 activation quantize-dequantize: rint (half to even) of x / s, clamped to [-128, 127], times s.
 *
 * <p>In float64 from the float32 inputs to the final narrowing, as the references compute it (see {@link Fp8Quant}:
 * the goldens tell float32 apart, which misses a quarter of the elements by one ulp).
 */
public final class Int8Quant {
    public static final double MIN_AMAX = 1e-10;

    private Int8Quant() {}

    /** (clamp(rint(x / s) + zp, -128, 127) - zp) · s over x[off, off+len). */
    public static void qdqStatic(float[] x, int off, int len, float scale, int zeroPoint) {
        if (zeroPoint == 0) {
            symmetric(x, off, len, scale);
            return;
        }
        double s = scale;
        for (int i = off, end = off + len; i < end; i++) {
            double q = Math.clamp(Math.rint(x[i] / s) + zeroPoint, -128, 127);
            x[i] = (float) ((q - zeroPoint) * s);
        }
    }

    /** The int8 code of x / s + zp: clamp(rint(x / s) + zp, -128, 127). */
    public static int quantize(float x, float scale, int zeroPoint) {
        return (int) Math.clamp(Math.rint(x / (double) scale) + zeroPoint, -128, 127);
    }

    /** The dynamic per-token scale max(amax, 1e-10) / 127, in double. */
    public static double perTokenScale(float[] x, int off, int len) {
        return Math.max(Nvfp4Codec.absMax(x, off, len), MIN_AMAX) / 127;
    }

    /** One token x[off, off+len) with its dynamic symmetric scale; returns the scale used. */
    public static double qdqPerToken(float[] x, int off, int len) {
        double scale = perTokenScale(x, off, len);
        symmetric(x, off, len, scale);
        return scale;
    }

    /**
     * Kept apart from the zero-point path so that -0 survives: adding a zero point of 0 would turn rint's -0 into
     * +0, and the symmetric reference (the goldens) keeps the sign.
     */
    private static void symmetric(float[] x, int off, int len, double scale) {
        for (int i = off, end = off + len; i < end; i++) {
            x[i] = (float) (Math.clamp(Math.rint(x[i] / scale), -128, 127) * scale);
        }
    }
}
