package io.moe4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The CPU attention's vector dot product and weighted sum against float64 sums, for every length from 0 to past
 * two vectors of the widest species (vector part, one-vector step, scalar tail) and offsets that are not aligned.
 */
class AttentionMathTest {
    private static final int MAX = 70;

    @Test
    void dotMatchesTheDoubleSumAtEveryLength() {
        SplittableRandom rnd = new SplittableRandom(5);
        float[] a = random(rnd, MAX + 3);
        float[] b = random(rnd, MAX + 5);
        for (int n = 0; n <= MAX; n++) {
            double want = 0;
            for (int i = 0; i < n; i++) {
                want += (double) a[3 + i] * b[5 + i];
            }
            assertThat((double) AttentionMath.dot(a, 3, b, 5, n)).as("n = %d", n).isCloseTo(want, within(1e-4));
        }
    }

    @Test
    void axpyAddsTheWeightedValuesAtEveryLength() {
        SplittableRandom rnd = new SplittableRandom(6);
        float[] v = random(rnd, MAX + 2);
        for (int n = 0; n <= MAX; n++) {
            float[] out = random(rnd, MAX + 7);
            float[] before = out.clone();
            AttentionMath.axpy(0.375f, v, 2, out, 7, n);
            for (int i = 0; i < out.length; i++) {
                double want = i >= 7 && i < 7 + n ? before[i] + 0.375 * v[2 + i - 7] : before[i];
                assertThat((double) out[i]).as("n = %d, element %d", n, i).isCloseTo(want, within(1e-6));
            }
        }
    }

    private static float[] random(SplittableRandom rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        return x;
    }
}
