package io.moe4j.format;

/**
 * The narrow floating-point element formats of OCP MX and NVFP4: FP4 E2M1, FP6 E3M2 and E2M3, FP8 E4M3FN and E5M2.
 *
 * <p>Codes are unsigned ints holding {@link #bits()} bits, sign in the top bit. {@link #decode(int)} is exact (every
 * code's value is a float32). {@link #encode(float)} is the saturating round-half-to-even conversion that the
 * conformance goldens use (ml_dtypes after clamping to the format's range): the input is first clamped to
 * ±{@link #maxNormal()}, so infinities and overflow land on the largest finite code, never on inf or NaN.
 */
public enum ElementFormat {
    /** FP4: 1 sign, 2 exponent, 1 mantissa bit, bias 1; no inf, no NaN; max 6. */
    E2M1(2, 1, 1, 2, -1),
    /** FP6: 1 sign, 3 exponent, 2 mantissa bits, bias 3; no inf, no NaN; max 28. */
    E3M2(3, 2, 3, 4, -1),
    /** FP6: 1 sign, 2 exponent, 3 mantissa bits, bias 1; no inf, no NaN; max 7.5. */
    E2M3(2, 3, 1, 2, -1),
    /** FP8: 1 sign, 4 exponent, 3 mantissa bits, bias 7; no inf, NaN only at S.1111.111; max 448. */
    E4M3FN(4, 3, 7, 8, 0x7F),
    /** FP8: 1 sign, 5 exponent, 2 mantissa bits, bias 15; IEEE-like inf and NaN; max 57344. */
    E5M2(5, 2, 15, 15, 0x7E);

    private final int exponentBits;
    private final int mantissaBits;
    private final int bias;
    private final int emax;
    /** Canonical quiet NaN code (positive), or -1 where the format has no NaN. */
    private final int nanCode;
    private final int bits;
    private final int codeMask;
    private final int signBit;
    private final float maxNormal;
    private final float minNormal;
    /** 2^(bias - 1 + mbits): scales a subnormal magnitude so that one subnormal step becomes 1. */
    private final float subnormalScale;
    /** (127 - bias) << mbits: the difference between float32's exponent field and ours, pre-shifted. */
    private final int rebias;
    /** The same for float64's exponent field. */
    private final long rebias64;
    private final float[] table;

    ElementFormat(int exponentBits, int mantissaBits, int bias, int emax, int nanCode) {
        this.exponentBits = exponentBits;
        this.mantissaBits = mantissaBits;
        this.bias = bias;
        this.emax = emax;
        this.nanCode = nanCode;
        this.bits = 1 + exponentBits + mantissaBits;
        this.codeMask = (1 << bits) - 1;
        this.signBit = 1 << (bits - 1);
        this.minNormal = Math.scalb(1f, 1 - bias);
        this.subnormalScale = Math.scalb(1f, bias - 1 + mantissaBits);
        this.rebias = (127 - bias) << mantissaBits;
        this.rebias64 = (long) (1023 - bias) << mantissaBits;
        this.table = buildTable();
        // The largest finite code is the one just below the NaN code for E4M3FN, below the inf code for E5M2,
        // and the all-ones magnitude for the formats without specials.
        int maxCode = switch (nanCode) {
            case -1 -> signBit - 1;
            case 0x7F -> 0x7E;
            default -> ((1 << exponentBits) - 2) << mantissaBits | ((1 << mantissaBits) - 1);
        };
        this.maxNormal = table[maxCode];
    }

    private float[] buildTable() {
        float[] t = new float[1 << bits];
        int expMax = (1 << exponentBits) - 1;
        for (int code = 0; code < t.length; code++) {
            int sign = code >>> (bits - 1);
            int exp = (code >>> mantissaBits) & expMax;
            int man = code & ((1 << mantissaBits) - 1);
            float mag;
            if (exp == 0) {
                mag = Math.scalb((float) man, 1 - bias - mantissaBits);
            } else {
                mag = Math.scalb((float) ((1 << mantissaBits) | man), exp - bias - mantissaBits);
            }
            if (nanCode == 0x7F && (code & 0x7F) == 0x7F) {
                mag = Float.NaN;
            } else if (nanCode == 0x7E && exp == expMax) {
                mag = man == 0 ? Float.POSITIVE_INFINITY : Float.NaN;
            }
            t[code] = sign == 0 ? mag : -mag;
        }
        return t;
    }

    /** Total width of a code: 4, 6 or 8. */
    public int bits() {
        return bits;
    }

    public int exponentBits() {
        return exponentBits;
    }

    public int mantissaBits() {
        return mantissaBits;
    }

    public int bias() {
        return bias;
    }

    /** The OCP MX emax: the unbiased exponent of {@link #maxNormal()}, used by the shared-scale rule. */
    public int emax() {
        return emax;
    }

    /** Largest finite value: 6, 28, 7.5, 448, 57344. */
    public float maxNormal() {
        return maxNormal;
    }

    /** Smallest positive normal value, 2^(1 - bias). */
    public float minNormal() {
        return minNormal;
    }

    /** Whether some code decodes to NaN (E4M3FN, E5M2). */
    public boolean hasNaN() {
        return nanCode >= 0;
    }

    /** The positive canonical NaN code (0x7F for E4M3FN, 0x7E for E5M2); -1 for formats without NaN. */
    public int nanCode() {
        return nanCode;
    }

    /** Number of distinct codes, 2^bits. */
    public int codeCount() {
        return 1 << bits;
    }

    /**
     * The value of a code. Only the low {@link #bits()} bits are read, so a sign-extended {@code byte} may be passed
     * as is.
     */
    public float decode(int code) {
        return table[code & codeMask];
    }

    /**
     * Saturating round-half-to-even: clamp to ±maxNormal, then round to the nearest code, ties to the even code.
     * The sign is kept (-0 gives the negative-zero code). NaN gives the NaN code with its sign where the format has
     * one, else 0.
     */
    public int encode(float x) {
        int xb = Float.floatToRawIntBits(x);
        int sign = (xb >>> 31) << (bits - 1);
        if (x != x) {
            return nanCode < 0 ? 0 : sign | nanCode;
        }
        float a = Math.min(Math.abs(x), maxNormal);
        int magnitude;
        if (a < minNormal) {
            // Power-of-two scaling is exact here, so rint sees the true quotient and rounds it exactly once.
            magnitude = (int) Math.rint(a * subnormalScale);
        } else {
            // Normal: round float32's mantissa to mbits directly on the bits; a carry out of the mantissa
            // correctly bumps the exponent, and the clamp above keeps it below the NaN/inf codes.
            int ab = Float.floatToRawIntBits(a);
            int shift = 23 - mantissaBits;
            int kept = ab >>> shift;
            int rest = ab & ((1 << shift) - 1);
            int half = 1 << (shift - 1);
            if (rest > half || (rest == half && (kept & 1) != 0)) {
                kept++;
            }
            magnitude = kept - rebias;
        }
        return sign | magnitude;
    }

    /**
     * {@link #encode(float)} of a double, rounded once: narrowing to float first could move a value near a midpoint
     * onto it and round twice. The activation references compute x / s in float64, so their quotients arrive here.
     */
    public int encode(double x) {
        long xb = Double.doubleToRawLongBits(x);
        int sign = (int) (xb >>> 63) << (bits - 1);
        if (x != x) {
            return nanCode < 0 ? 0 : sign | nanCode;
        }
        double a = Math.min(Math.abs(x), maxNormal);
        if (a < minNormal) {
            return sign | (int) Math.rint(a * subnormalScale);
        }
        long ab = Double.doubleToRawLongBits(a);
        int shift = 52 - mantissaBits;
        long kept = ab >>> shift;
        long rest = ab & ((1L << shift) - 1);
        long half = 1L << (shift - 1);
        if (rest > half || (rest == half && (kept & 1) != 0)) {
            kept++;
        }
        return sign | (int) (kept - rebias64);
    }

    /** Quantize-dequantize one value: decode(encode(x)). */
    public float round(float x) {
        return table[encode(x)];
    }

    /** A copy of the decode table, indexed by code. */
    public float[] decodeTable() {
        return table.clone();
    }

    /** The decode table itself, for the codecs' hot loops in this package; never hand it out. */
    float[] table() {
        return table;
    }
}
