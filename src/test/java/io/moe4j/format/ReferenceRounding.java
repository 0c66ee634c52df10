package io.moe4j.format;

/**
 * Slow, obviously-correct reference conversions for the tests: search every code for the nearest value in double
 * arithmetic, ties to the even code. Independent of the bit tricks in {@link ElementFormat#encode(float)}.
 */
final class ReferenceRounding {
    private ReferenceRounding() {}

    /** Value of a code from its fields, in double, written from the format definitions. */
    static double value(ElementFormat f, int code) {
        int m = f.mantissaBits();
        int e = f.exponentBits();
        int sign = (code >>> (m + e)) & 1;
        int exp = (code >>> m) & ((1 << e) - 1);
        int man = code & ((1 << m) - 1);
        double mag = exp == 0
                ? man * Math.pow(2, 1 - f.bias() - m)
                : (1 + man / Math.pow(2, m)) * Math.pow(2, exp - f.bias());
        if (f == ElementFormat.E4M3FN && (code & 0x7F) == 0x7F) {
            return Double.NaN;
        }
        if (f == ElementFormat.E5M2 && exp == 31) {
            mag = man == 0 ? Double.POSITIVE_INFINITY : Double.NaN;
        }
        return sign == 1 ? -mag : mag;
    }

    static boolean isFinite(ElementFormat f, int code) {
        return Double.isFinite(value(f, code));
    }

    /** Saturating round-half-to-even by exhaustive search. */
    static int encode(ElementFormat f, double x) {
        int signBit = 1 << (f.bits() - 1);
        boolean negative = Double.doubleToRawLongBits(x) < 0;
        if (Double.isNaN(x)) {
            return f.hasNaN() ? ((negative ? signBit : 0) | f.nanCode()) : 0;
        }
        double a = Math.min(Math.abs(x), f.maxNormal());
        int best = -1;
        double bestDistance = Double.POSITIVE_INFINITY;
        for (int c = 0; c < signBit; c++) {
            if (!isFinite(f, c)) {
                continue;
            }
            double d = Math.abs(value(f, c) - a);
            if (d < bestDistance || (d == bestDistance && (c & 1) == 0)) {
                best = c;
                bestDistance = d;
            }
        }
        return (negative ? signBit : 0) | best;
    }

    /** Round-half-to-even of a float to a float with {@code keepBits} high bits (bf16: 16), by comparing neighbours. */
    static int roundToHighBits(float x, int dropBits) {
        int b = Float.floatToRawIntBits(x);
        int down = b >>> dropBits;
        int up = down + 1;
        double lo = Float.intBitsToFloat(down << dropBits);
        double hi = Float.intBitsToFloat(up << dropBits);
        if (Float.isInfinite(Float.intBitsToFloat(up << dropBits))) {
            // Above the largest finite value the next candidate is infinity; IEEE rounds there when x is at least
            // halfway to the would-be next power of two, i.e. treat the infinity as that finite value.
            hi = Math.copySign(Math.scalb(1.0, 128), x);
        }
        double dl = Math.abs(x - lo);
        double dh = Math.abs(hi - x);
        if (dl < dh || (dl == dh && (down & 1) == 0)) {
            return down;
        }
        return up;
    }
}
