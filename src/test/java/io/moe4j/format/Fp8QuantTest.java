package io.moe4j.format;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * FP8 quantize-dequantize multiplies by the scale's reciprocal where that provably rounds as the quotient does
 * ({@link Fp8Quant#roundsAsQuotient}); every element must still be the reference's e4m3(x / s) · s, computed here
 * with the division, on random values and on values whose quotients sit at and around every E4M3 rounding boundary.
 */
class Fp8QuantTest {
    private static final ElementFormat E4M3 = ElementFormat.E4M3FN;
    private static final float[] TABLE = E4M3.decodeTable();

    /** The reference's element: the float64 quotient rounded to E4M3 once, times the scale, narrowed. */
    private static float reference(float x, double scale) {
        return (float) (TABLE[E4M3.encode(x / scale)] * scale);
    }

    @Test
    void randomGroupsMatchTheDivision() {
        SplittableRandom rnd = new SplittableRandom(11);
        int group = 128;
        long fast = 0;
        long all = 0;
        for (int round = 0; round < 2000; round++) {
            float[] x = new float[group];
            int exponent = rnd.nextInt(-30, 30);
            for (int i = 0; i < group; i++) {
                x[i] = (float) (rnd.nextGaussian() * Math.scalb(1.0, exponent + rnd.nextInt(-6, 2)));
            }
            float[] got = x.clone();
            Fp8Quant.qdqGroup(got, 0, group, group);
            double scale = Math.max(Nvfp4Codec.absMax(x, 0, group), Fp8Quant.MIN_GROUP_AMAX) / Fp8Quant.E4M3_MAX;
            for (int i = 0; i < group; i++) {
                assertThat(got[i]).as("x %s, scale %s", x[i], scale).isEqualTo(reference(x[i], scale));
                fast += Fp8Quant.roundsAsQuotient(x[i] * (1 / scale)) ? 1 : 0;
                all++;
            }
        }
        // the multiply is the rule, the division the exception (values below E4M3's normals, near boundaries)
        assertThat((double) fast / all).isGreaterThan(0.9);
    }

    @Test
    void quotientsAtAndAroundEveryRoundingBoundaryMatchTheDivision() {
        SplittableRandom rnd = new SplittableRandom(12);
        float[] values = new float[128];
        int n = 0;
        for (int c = 0; c < 127; c++) { // positive codes 0x00..0x7E, 0x7F is NaN
            if (!Float.isNaN(TABLE[c + 1])) {
                values[n++] = (TABLE[c] + TABLE[c + 1]) / 2; // the boundary between neighbours (exact in float)
            }
        }
        values[n++] = 448; // the clamp
        for (int trial = 0; trial < 300; trial++) {
            float amax = (float) Math.scalb(1 + rnd.nextDouble(), rnd.nextInt(-40, 40));
            double scale = Math.max(amax, Fp8Quant.MIN_GROUP_AMAX) / Fp8Quant.E4M3_MAX;
            for (int b = 0; b < n; b++) {
                float at = (float) (values[b] * scale);
                for (int step = -4; step <= 4; step++) {
                    float x = nudge(at, step);
                    if (!(Math.abs(x) <= amax)) {
                        continue;
                    }
                    float sign = rnd.nextBoolean() ? 1 : -1;
                    float[] got = {amax, sign * x};
                    Fp8Quant.qdqGroup(got, 0, 2, 2);
                    assertThat(got[1]).as("boundary %s, x %s, amax %s", values[b], sign * x, amax)
                            .isEqualTo(reference(sign * x, scale));
                    assertThat(got[0]).isEqualTo(reference(amax, scale));
                }
            }
        }
    }

    @Test
    void perTokenAndStaticScalesMatchTheDivision() {
        SplittableRandom rnd = new SplittableRandom(13);
        for (int round = 0; round < 500; round++) {
            float[] x = new float[64];
            for (int i = 0; i < x.length; i++) {
                x[i] = (float) (rnd.nextGaussian() * Math.scalb(1.0, rnd.nextInt(-12, 12)));
            }
            float[] token = x.clone();
            double scale = Fp8Quant.qdqPerToken(token, 0, x.length);
            float staticScale = (float) rnd.nextDouble(1e-4, 1);
            float[] fixed = x.clone();
            Fp8Quant.qdqStatic(fixed, 0, x.length, staticScale);
            for (int i = 0; i < x.length; i++) {
                assertThat(token[i]).isEqualTo(reference(x[i], scale));
                assertThat(fixed[i]).isEqualTo(reference(x[i], staticScale));
            }
        }
    }

    @Test
    void theMultiplyIsRefusedNearBoundariesAndBelowNormals() {
        assertThat(Fp8Quant.roundsAsQuotient(1.0625)).isFalse(); // 1 + 2^-4: between 1 and 1.125
        assertThat(Fp8Quant.roundsAsQuotient(Math.nextUp(1.0625))).isFalse();
        assertThat(Fp8Quant.roundsAsQuotient(432)).isFalse(); // between 416 and 448
        assertThat(Fp8Quant.roundsAsQuotient(0x1p-7)).isFalse(); // E4M3 subnormal range
        assertThat(Fp8Quant.roundsAsQuotient(0)).isFalse();
        assertThat(Fp8Quant.roundsAsQuotient(Double.NaN)).isFalse();
        assertThat(Fp8Quant.roundsAsQuotient(1.03)).isTrue();
        assertThat(Fp8Quant.roundsAsQuotient(-300.7)).isTrue();
    }

    private static float nudge(float v, int steps) {
        for (int i = 0; i < Math.abs(steps); i++) {
            v = steps > 0 ? Math.nextUp(v) : Math.nextDown(v);
        }
        return v;
    }
}
