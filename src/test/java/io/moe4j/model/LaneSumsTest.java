package io.moe4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.moe4j.testing.JitStability;
import java.util.SplittableRandom;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.Test;

/** {@link LaneSums}: the lanes folded by halves, to the bit, before and after the JIT has compiled the caller. */
class LaneSumsTest {
    private static final int L = LaneSums.S.length();

    /** The fold order on an array: lane i += lane i + L/2, then i + L/4, ... */
    private static float folded(float[] a, int off) {
        float[] v = java.util.Arrays.copyOfRange(a, off, off + L);
        for (int d = L / 2; d >= 1; d /= 2) {
            float[] next = v.clone();
            for (int i = 0; i < L; i++) {
                next[i] = v[i] + v[(i + d) % L];
            }
            v = next;
        }
        return v[0];
    }

    private static float[] sums(float[] a) {
        float[] out = new float[a.length / L];
        for (int i = 0; i < out.length; i++) {
            out[i] = LaneSums.sum(FloatVector.fromArray(LaneSums.S, a, i * L));
        }
        return out;
    }

    private static float[] values() {
        SplittableRandom rnd = new SplittableRandom(3);
        float[] a = new float[L * 4096];
        for (int i = 0; i < a.length; i++) {
            a[i] = (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(6)));
        }
        return a;
    }

    @Test
    void theLanesFoldedByHalves() {
        float[] a = values();
        float[] got = sums(a);
        for (int i = 0; i < got.length; i++) {
            assertThat(Float.floatToRawIntBits(got[i])).isEqualTo(Float.floatToRawIntBits(folded(a, i * L)));
        }
    }

    /** reduceLanes(ADD) failed this on an 8-lane AVX2 machine: 548 of 1,000 sums differed in their last bits. */
    @Test
    void theSameBitsBeforeAndAfterCompilation() {
        float[] a = values();
        JitStability.assertSameBitsAfterCompilation(() -> sums(a), 500);
    }
}
