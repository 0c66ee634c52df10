package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;

/**
 * e^x on Vector API lanes from adds, multiplies, fused multiply-adds and bit operations only, so that a lane's result
 * is one float wherever the code runs. {@code lanewise(EXP)} runs the JDK's vector math library once C2 has compiled
 * the caller and {@code Math.exp} lane by lane before that, and the two differ in the last bit (a scratch loop over
 * 8,000 random x in [-30, 0]: 335 differed), which made a model's logits depend on how far the JIT had got (the
 * attention's softmax and the experts' SiLU / SwiGLU-OAI use this).
 *
 * <p>x = n ln2 + r with n = round(x log2 e) and |r| &lt;= ln2 / 2 (ln2 in two parts, Cody and Waite), e^r by the
 * degree-7 minimax polynomial of the Cephes library's expf (about 1 ulp), times 2^n made in two halves so that every
 * n of the float range has its exponent field. Below -87 the result is 0 rather than a value near or under 2^-126
 * (Intel cores run subnormal operands through microcode assists, and e^-87 is 1.6e-38); above 88.72284 (float's
 * largest e^x) +infinity; NaN stays NaN. |x| under 2^-60 is taken as 0: e^x is 1 in float either way, and r·r of
 * such an x would be subnormal. {@link #exp(float)} is the same arithmetic on one float, the definition the
 * tests hold the lanes to.
 */
public final class VectorExp {
    /** Below this the result is 0 (e^-87 = 1.6e-38 is still normal; the rest of the way down is not kept). */
    static final float LOW = -87f;
    /** Above this e^x exceeds Float.MAX_VALUE: +infinity. */
    static final float HIGH = 88.72283935546875f;
    private static final float LOG2E = 1.44269504088896341f;
    /** Below this |x| the reduction starts from 0 (r·r would be subnormal; 1 + x rounds to 1 anyway). */
    static final float TINY = 0x1p-60f;
    /** 1.5 * 2^23: adding it rounds to an integer (to nearest even), held in the low bits of the sum. */
    private static final float ROUNDER = 12582912f;
    private static final int ROUNDER_BITS = Float.floatToRawIntBits(ROUNDER);
    private static final float LN2_HI = 0.693359375f;
    private static final float LN2_LO = -2.12194440e-4f;
    private static final float P0 = 1.9875691500e-4f;
    private static final float P1 = 1.3981999507e-3f;
    private static final float P2 = 8.3334519073e-3f;
    private static final float P3 = 4.1665795894e-2f;
    private static final float P4 = 1.6666665459e-1f;
    private static final float P5 = 5.0000001201e-1f;

    private VectorExp() {
    }

    /** e^x lane by lane (see the class comment for the rules at the ends of the range). */
    public static FloatVector exp(FloatVector x) {
        FloatVector xc = x.max(LOW).min(HIGH).blend(0f, x.abs().compare(VectorOperators.LT, TINY)); // NaN stays NaN
        FloatVector t = xc.fma(LOG2E, ROUNDER);
        FloatVector n = t.sub(ROUNDER);
        IntVector ni = t.reinterpretAsInts().sub(ROUNDER_BITS);
        FloatVector r = n.fma(FloatVector.broadcast(x.species(), -LN2_HI), xc);
        r = n.fma(FloatVector.broadcast(x.species(), -LN2_LO), r);
        FloatVector p = r.fma(P0, P1);
        p = p.fma(r, FloatVector.broadcast(x.species(), P2));
        p = p.fma(r, FloatVector.broadcast(x.species(), P3));
        p = p.fma(r, FloatVector.broadcast(x.species(), P4));
        p = p.fma(r, FloatVector.broadcast(x.species(), P5));
        FloatVector y = r.mul(r).fma(p, r).add(1f);
        IntVector half = ni.lanewise(VectorOperators.ASHR, 1);
        FloatVector a = half.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        FloatVector b = ni.sub(half).add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
        y = y.mul(a).mul(b);
        y = y.blend(0f, x.compare(VectorOperators.LT, LOW));
        return y.blend(Float.POSITIVE_INFINITY, x.compare(VectorOperators.GT, HIGH));
    }

    /** {@link #exp(FloatVector)}'s arithmetic on one float. */
    public static float exp(float x) {
        if (x < LOW) {
            return 0f;
        }
        if (x > HIGH) {
            return Float.POSITIVE_INFINITY;
        }
        float xc = Math.abs(x) < TINY ? 0f : Math.min(Math.max(x, LOW), HIGH);
        float t = Math.fma(xc, LOG2E, ROUNDER);
        float n = t - ROUNDER;
        int ni = Float.floatToRawIntBits(t) - ROUNDER_BITS;
        float r = Math.fma(n, -LN2_HI, xc);
        r = Math.fma(n, -LN2_LO, r);
        float p = Math.fma(r, P0, P1);
        p = Math.fma(p, r, P2);
        p = Math.fma(p, r, P3);
        p = Math.fma(p, r, P4);
        p = Math.fma(p, r, P5);
        float y = Math.fma(r * r, p, r) + 1f;
        int half = ni >> 1;
        y *= Float.intBitsToFloat((half + 127) << 23);
        return y * Float.intBitsToFloat((ni - half + 127) << 23);
    }
}
