package io.moe4j.format;

/** bfloat16: the top half of a float32. */
public final class Bf16 {
    private Bf16() {}

    /** Exact: bf16 is a truncated float32. */
    public static float toFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /**
     * Round to nearest, ties to even; overflow rounds to infinity as IEEE requires. A NaN stays a NaN of the same
     * sign: its payload may live only in the dropped low half, so the quiet bit is forced rather than trusting
     * truncation, which could otherwise turn it into infinity.
     */
    public static short fromFloat(float f) {
        int b = Float.floatToRawIntBits(f);
        if (f != f) {
            return (short) ((b >>> 16) | 0x0040);
        }
        int lsb = (b >>> 16) & 1;
        return (short) ((b + 0x7FFF + lsb) >>> 16);
    }

    /** bf16(x) as a float: x rounded to the nearest bf16, ties to even. */
    public static float round(float f) {
        return toFloat(fromFloat(f));
    }
}
