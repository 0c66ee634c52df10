package io.moe4j.format;

/**
 * FP8 E4M3 activation quantize-dequantize, as the conformance references apply it to GEMM inputs: the value is
 * divided by the scale, clamped to ±448, rounded to E4M3 (half to even) and multiplied back.
 *
 * <p>The arithmetic is float64 from the float32 inputs to the final narrowing, because that is what the references
 * do (their MoE block runs in float64): the goldens tell the two apart, and float32 scale and quotient miss about a
 * fifth of the elements by one ulp. The E4M3 rounding is taken from the double quotient directly
 * ({@link ElementFormat#encode(double)}) so that it rounds once; where a multiply by the scale's reciprocal is
 * certain to give the quotient's code ({@link #roundsAsQuotient}) the product stands in for the quotient.
 */
public final class Fp8Quant {
    public static final double E4M3_MAX = 448;
    /** The floor of a dynamic per-token scale: 1 / (448 · 512), so an all-zero token does not divide by zero. */
    public static final double MIN_TOKEN_SCALE = 1.0 / (448 * 512);
    /** The floor of a group's amax in block FP8. */
    public static final double MIN_GROUP_AMAX = 1e-10;

    private static final ElementFormat E4M3FN = ElementFormat.E4M3FN;
    private static final float[] E4M3 = E4M3FN.table();

    private Fp8Quant() {}

    /** e4m3(clamp(x / s, ±448)) · s over x[off, off+len), the static scale widened to double. */
    public static void qdqStatic(float[] x, int off, int len, float scale) {
        qdq(x, off, len, scale);
    }

    /** The dynamic per-token scale max(amax / 448, 1 / (448 · 512)), in double. */
    public static double perTokenScale(float[] x, int off, int len) {
        return Math.max(Nvfp4Codec.absMax(x, off, len) / E4M3_MAX, MIN_TOKEN_SCALE);
    }

    /** One token x[off, off+len) with its dynamic scale; returns the scale used. */
    public static double qdqPerToken(float[] x, int off, int len) {
        double scale = perTokenScale(x, off, len);
        qdq(x, off, len, scale);
        return scale;
    }

    /** Block FP8 activations: each run of {@code group} channels of x[off, off+len) gets max(amax, 1e-10) / 448. */
    public static void qdqGroup(float[] x, int off, int len, int group) {
        if (group <= 0) {
            throw new IllegalArgumentException("group must be positive: " + group);
        }
        for (int g = off, end = off + len; g < end; g += group) {
            int n = Math.min(group, end - g);
            qdq(x, g, n, Math.max(Nvfp4Codec.absMax(x, g, n), MIN_GROUP_AMAX) / E4M3_MAX);
        }
    }

    private static void qdq(float[] x, int off, int len, double scale) {
        double inverse = 1 / scale;
        for (int i = off, end = off + len; i < end; i++) {
            double q = x[i] * inverse;
            if (!roundsAsQuotient(q)) {
                q = x[i] / scale;
            }
            // encode clamps to ±448 itself, which is the reference's explicit clamp.
            x[i] = (float) (E4M3[E4M3FN.encode(q)] * scale);
        }
    }

    /**
     * Whether {@code q}, a product x · fl(1 / s), rounds to the E4M3 code of the quotient fl(x / s) itself. The two
     * differ by at most ~3 units in their last place (one rounding in the reciprocal and one in each result; twice as
     * many ulps where they sit in different binades), so they round alike unless an E4M3 rounding boundary lies that
     * close: in the normal range a boundary is a value whose bits below E4M3's three mantissa bits are 1 followed by
     * zeros, and q is taken when its own such bits are more than 16 ulps away from that. Below E4M3's smallest
     * normal (2^-6, where the grid is 2^-9), zero and NaN go to the division. Fp8QuantTest checks it on random values
     * and on quotients at and around every boundary. On the 2-core Zen 3 a group of 128 took 12.6-12.8 ns an element
     * this way against 14.2-14.6 with the division alone (a throwaway loop, best of 10, four rounds).
     */
    static boolean roundsAsQuotient(double q) {
        double a = Math.abs(q);
        if (!(a >= 0x1p-6)) {
            return false;
        }
        long below = Double.doubleToRawLongBits(a) & ((1L << 49) - 1);
        return Math.abs(below - (1L << 48)) > 16;
    }
}
