package io.moe4j.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.moe4j.testing.JitStability;
import java.util.SplittableRandom;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorExp}: the lanes are {@link VectorExp#exp(float)} to the bit (so one float wherever the code runs),
 * within about an ulp of e^x, never subnormal, and the ends of the range and NaN as the class says.
 */
class VectorExpTest {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;

    private static float[] lanes(float[] x) {
        float[] out = new float[x.length];
        for (int i = 0; i < x.length; i += S.length()) {
            VectorExp.exp(FloatVector.fromArray(S, x, i)).intoArray(out, i);
        }
        return out;
    }

    private static float[] inputs() {
        SplittableRandom rnd = new SplittableRandom(1);
        float[] special = {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f, 1f, -1f,
            VectorExp.LOW, Math.nextDown(VectorExp.LOW), Math.nextUp(VectorExp.LOW), VectorExp.HIGH,
            Math.nextUp(VectorExp.HIGH), Math.nextDown(VectorExp.HIGH), -87.33654f, -103.97f, -41f, 88f, 88.5f,
            Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_NORMAL, -Float.MIN_NORMAL, 0.34657359f, -0.34657359f};
        int n = 64 * 1024;
        float[] x = new float[n];
        System.arraycopy(special, 0, x, 0, special.length);
        for (int i = special.length; i < n; i++) {
            x[i] = (float) (i % 2 == 0 ? rnd.nextDouble(-100, 100) : rnd.nextDouble(-2, 2));
        }
        return x;
    }

    @Test
    void lanesAreTheScalarDefinitionToTheBit() {
        float[] x = inputs();
        float[] got = lanes(x);
        for (int i = 0; i < x.length; i++) {
            assertThat(Float.floatToRawIntBits(got[i])).as("e^%s", x[i])
                    .isEqualTo(Float.floatToRawIntBits(VectorExp.exp(x[i])));
        }
    }

    @Test
    void withinAboutAnUlpOfEToTheXAndNeverSubnormal() {
        float[] x = inputs();
        float[] got = lanes(x);
        double worst = 0;
        for (int i = 0; i < x.length; i++) {
            float v = got[i];
            assertThat(v == 0f || Float.isNaN(v) || Math.abs(v) >= Float.MIN_NORMAL).as("e^%s = %s", x[i], v).isTrue();
            if (x[i] >= VectorExp.LOW && x[i] <= 88.7f) {
                double want = Math.exp(x[i]);
                worst = Math.max(worst, Math.abs(v - want) / want);
            }
        }
        // float's ulp is 2^-23 relative at most (1.2e-7); the polynomial and the rounding add up to about one
        assertThat(worst).isLessThan(2.4e-7);
    }

    @Test
    void theEndsOfTheRangeAndNaN() {
        assertThat(VectorExp.exp(Float.NaN)).isNaN();
        assertThat(VectorExp.exp(Float.NEGATIVE_INFINITY)).isZero();
        assertThat(VectorExp.exp(Math.nextDown(VectorExp.LOW))).isZero();
        assertThat(VectorExp.exp(VectorExp.LOW)).isGreaterThanOrEqualTo(Float.MIN_NORMAL);
        assertThat(VectorExp.exp(Float.POSITIVE_INFINITY)).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(VectorExp.exp(Math.nextUp(VectorExp.HIGH))).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(VectorExp.exp(88.5f)).isFinite();
        assertThat(VectorExp.exp(0f)).isEqualTo(1f);
        float[] x = {Float.NaN, Float.NEGATIVE_INFINITY, Float.POSITIVE_INFINITY, 0f, 88.5f, -90f, 1f, 2f,
            3f, 4f, 5f, 6f, 7f, 8f, 9f, 10f};
        float[] got = lanes(x);
        assertThat(got[0]).isNaN();
        assertThat(got[1]).isZero();
        assertThat(got[2]).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(got[3]).isEqualTo(1f);
        assertThat(got[4]).isFinite();
        assertThat(got[5]).isZero();
    }

    /**
     * The property the class exists for: the same lanes before and after the JIT has compiled the caller (the JDK's
     * lanewise EXP failed this: 335 of 8,000 differed). Vacuous on a JVM that never compiles, never falsely red.
     */
    @Test
    void theSameBitsBeforeAndAfterCompilation() {
        float[] x = inputs();
        JitStability.assertSameBitsAfterCompilation(() -> lanes(x), 200);
    }

    /** Inputs under 2^-60 in magnitude start the reduction from 0 (no subnormal r·r) and give exactly 1. */
    @Test
    void tinyInputsGiveOne() {
        float[] x = new float[2 * S.length()];
        for (int i = 0; i < x.length; i++) {
            x[i] = (i % 2 == 0 ? 1 : -1) * Math.scalb(1f, -61 - 4 * i);
        }
        x[0] = Float.MIN_VALUE;
        float[] got = lanes(x);
        for (int i = 0; i < x.length; i++) {
            assertThat(got[i]).as("e^%s", x[i]).isEqualTo(1f);
            assertThat(VectorExp.exp(x[i])).as("e^%s", x[i]).isEqualTo(1f);
        }
    }
}
