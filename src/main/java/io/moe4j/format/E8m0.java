package io.moe4j.format;

/**
 * OCP MX shared scale: an 8-bit biased exponent, value 2^(code - 127), with 0xFF reserved for NaN. Code 0 is
 * 2^-127, a float32 subnormal, which is still exact.
 */
public final class E8m0 {
    public static final int BIAS = 127;
    public static final int NAN_CODE = 0xFF;
    public static final int MIN_EXPONENT = -127;
    public static final int MAX_EXPONENT = 127;

    private static final float[] TABLE = new float[256];
    /** 2^-(code - 127): every power of two in [2^-127, 2^127] is a float32, so multiplying by it is exactly dividing. */
    private static final float[] INVERSE = new float[256];

    static {
        for (int code = 0; code < 255; code++) {
            TABLE[code] = Math.scalb(1f, code - BIAS);
            INVERSE[code] = Math.scalb(1f, BIAS - code);
        }
        TABLE[NAN_CODE] = Float.NaN;
        INVERSE[NAN_CODE] = Float.NaN;
    }

    private E8m0() {}

    /** 2^(code - 127); 0xFF is NaN. Only the low 8 bits are read, so a sign-extended byte may be passed. */
    public static float decode(int code) {
        return TABLE[code & 0xFF];
    }

    /** 1 / decode(code), exact; NaN for the NaN code. */
    public static float inverse(int code) {
        return INVERSE[code & 0xFF];
    }

    /** The code of 2^unbiasedExp, the exponent clamped to the representable [-127, 127]. */
    public static int encodeExponent(int unbiasedExp) {
        return Math.clamp(unbiasedExp, MIN_EXPONENT, MAX_EXPONENT) + BIAS;
    }

    /** The unbiased exponent of a code (code - 127); meaningless for the NaN code. */
    public static int exponent(int code) {
        return (code & 0xFF) - BIAS;
    }
}
