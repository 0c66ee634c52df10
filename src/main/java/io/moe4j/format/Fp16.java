package io.moe4j.format;

/** IEEE binary16. The JDK's conversions are exact (widening) and round-half-to-even (narrowing). */
public final class Fp16 {
    private Fp16() {}

    public static float toFloat(short bits) {
        return Float.float16ToFloat(bits);
    }

    /** Round to nearest, ties to even; overflow to infinity; NaN stays NaN. */
    public static short fromFloat(float f) {
        return Float.floatToFloat16(f);
    }

    public static float round(float f) {
        return Float.float16ToFloat(Float.floatToFloat16(f));
    }
}
