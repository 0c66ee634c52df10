package io.moe4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import org.junit.jupiter.api.Test;

/**
 * The CPU attention's vector dot product (and the test's reference axpy) against float64 sums, for every length from
 * 0 to past two vectors of the widest species (vector part, one-vector step, scalar tail) and offsets that are not
 * aligned; and the block forms: the dots against float64 sums for 1-9 queries, the weighted sum bit for bit against
 * a run of the reference axpy (the output loaded and stored once a value, as the attention summed before).
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
    void theReferenceAxpyAddsTheWeightedValuesAtEveryLength() {
        SplittableRandom rnd = new SplittableRandom(6);
        float[] v = random(rnd, MAX + 2);
        for (int n = 0; n <= MAX; n++) {
            float[] out = random(rnd, MAX + 7);
            float[] before = out.clone();
            axpy(0.375f, v, 2, out, 7, n);
            for (int i = 0; i < out.length; i++) {
                double want = i >= 7 && i < 7 + n ? before[i] + 0.375 * v[2 + i - 7] : before[i];
                assertThat((double) out[i]).as("n = %d, element %d", n, i).isCloseTo(want, within(1e-6));
            }
        }
    }

    @Test
    void blockDotsMatchTheDoubleSumForEveryQuery() {
        SplittableRandom rnd = new SplittableRandom(7);
        int keys = 5;
        int stride = MAX + 9;
        float[] k = random(rnd, 3 + keys * stride);
        for (int rows = 1; rows <= 9; rows++) {
            float[] q = random(rnd, 11 + rows * (MAX + 1));
            int[] qOff = new int[rows];
            for (int r = 0; r < rows; r++) {
                qOff[r] = 11 + r * (MAX + 1);
            }
            for (int d = 0; d <= MAX; d++) {
                float[] out = new float[2 + rows * keys];
                AttentionMath.dots(q, qOff, rows, k, 3, stride, keys, d, 0.125f, out, 2, keys);
                for (int r = 0; r < rows; r++) {
                    for (int j = 0; j < keys; j++) {
                        double want = 0;
                        for (int i = 0; i < d; i++) {
                            want += (double) q[qOff[r] + i] * k[3 + j * stride + i];
                        }
                        assertThat((double) out[2 + r * keys + j]).as("rows %d, d %d, query %d, key %d", rows, d, r, j)
                                .isCloseTo(want * 0.125, within(2e-5));
                    }
                }
            }
        }
    }

    @Test
    void weightedSumIsARunOfAxpyBitForBit() {
        SplittableRandom rnd = new SplittableRandom(8);
        int stride = 4 * MAX + 5;
        for (int n = 0; n <= 6; n++) {
            float[] p = random(rnd, 1 + n);
            float[] v = random(rnd, 2 + Math.max(1, n) * stride);
            for (int d = 0; d <= 4 * MAX; d += d < MAX ? 1 : 13) {
                float[] out = random(rnd, 5 + d);
                float[] want = out.clone();
                for (int j = 0; j < n; j++) {
                    axpy(p[1 + j], v, 2 + j * stride, want, 5, d);
                }
                AttentionMath.weightedSum(p, 1, n, v, 2, stride, d, out, 5);
                assertThat(out).as("n %d, d %d", n, d).isEqualTo(want);
            }
        }
    }

    /**
     * The vector softmax against float64 at every length, with and without a sink, on scores spread so that some
     * weights fall under the cut: kept weights within 1e-6 of float64 (absolute, weights are at most 1), dropped ones
     * under e^-41 of the largest in float64, none subnormal, and the sum (with the sink's share) within 1e-5 of 1.
     */
    @Test
    void softmaxMatchesFloat64AndLeavesNoSubnormal() {
        SplittableRandom rnd = new SplittableRandom(9);
        for (boolean withSink : new boolean[] {false, true}) {
            for (int n = 1; n <= MAX; n++) {
                float[] s = new float[n + 3];
                for (int i = 0; i < s.length; i++) {
                    s[i] = (float) (rnd.nextGaussian() * 30);
                }
                float sink = (float) rnd.nextGaussian() * 30;
                float[] got = s.clone();
                AttentionMath.softmax(got, 3, n, withSink, sink);
                double max = withSink ? sink : Double.NEGATIVE_INFINITY;
                for (int i = 0; i < n; i++) {
                    max = Math.max(max, s[3 + i]);
                }
                double total = withSink ? Math.exp(sink - max) : 0;
                for (int i = 0; i < n; i++) {
                    total += Math.exp(s[3 + i] - max);
                }
                double sum = withSink ? Math.exp(sink - max) / total : 0;
                for (int i = 0; i < n; i++) {
                    double want = Math.exp(s[3 + i] - max) / total;
                    float p = got[3 + i];
                    assertThat(p == 0 || Math.abs(p) >= Float.MIN_NORMAL).as("n %d: %s is subnormal", n, p).isTrue();
                    if (p == 0) {
                        assertThat(s[3 + i] - max).as("n %d, dropped %d", n, i).isLessThan(-41 + 1e-3);
                    } else {
                        assertThat((double) p).as("n %d, weight %d", n, i).isCloseTo(want, within(1e-6));
                    }
                    sum += p;
                }
                assertThat(sum).as("n %d, sink %s", n, withSink).isCloseTo(1.0, within(1e-5));
                assertThat(got[0]).isEqualTo(s[0]);
            }
        }
    }

    /**
     * The reference the weighted sum is checked against: out[oOff..oOff+n) += w · v[vOff..vOff+n), the output loaded,
     * added (one fused multiply-add a lane) and stored once a value, as the attention summed values before.
     */
    static void axpy(float w, float[] v, int vOff, float[] out, int oOff, int n) {
        VectorSpecies<Float> s = FloatVector.SPECIES_PREFERRED;
        FloatVector wv = FloatVector.broadcast(s, w);
        int i = 0;
        for (; i + s.length() <= n; i += s.length()) {
            FloatVector.fromArray(s, v, vOff + i).fma(wv, FloatVector.fromArray(s, out, oOff + i))
                    .intoArray(out, oOff + i);
        }
        for (; i < n; i++) {
            out[oOff + i] += w * v[vOff + i];
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
