package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Multiplies a decoded panel (w[c·L + lane], {@link VectorPanelDecoder}) with the tokens, up to four at a time:
 * each weight vector is loaded once and meets every token of the tile, whose inputs are broadcast. A single token
 * keeps four partial sums so that consecutive fused multiply-adds do not wait on each other. Results go to
 * {@code sums} (t·L + lane); the caller scales and stores them.
 */
final class VectorPanelDot {
    private static final VectorSpecies<Float> F = VectorShapes.F;
    private static final int L = PanelMatrix.LANES;

    private VectorPanelDot() {
    }

    /**
     * Two panels at once: sums[t·L + lane] for panel a and sums[(n + t)·L + lane] for panel b. Four tokens against
     * two panels are eight independent sums, enough to hide the multiply-add latency, from six loads a column.
     */
    static void dot(float[] a, float[] b, int padded, float[] x, int n, float[] sums) {
        int t = 0;
        for (; t + 4 <= n; t += 4) {
            fourByTwo(a, b, padded, x, t, n, sums);
        }
        for (; t + 2 <= n; t += 2) {
            two(a, padded, x, t, sums, 0);
            two(b, padded, x, t, sums, n);
        }
        if (t < n) {
            one(a, padded, x, t, sums, 0);
            one(b, padded, x, t, sums, n);
        }
    }

    private static void fourByTwo(float[] wa, float[] wb, int padded, float[] x, int t, int n, float[] sums) {
        FloatVector a0 = FloatVector.zero(F);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        FloatVector b0 = a0;
        FloatVector b1 = a0;
        FloatVector b2 = a0;
        FloatVector b3 = a0;
        int x0 = t * padded;
        int x1 = x0 + padded;
        int x2 = x1 + padded;
        int x3 = x2 + padded;
        for (int c = 0; c < padded; c++) {
            FloatVector va = FloatVector.fromArray(F, wa, c * L);
            FloatVector vb = FloatVector.fromArray(F, wb, c * L);
            FloatVector s0 = FloatVector.broadcast(F, x[x0 + c]);
            a0 = va.fma(s0, a0);
            b0 = vb.fma(s0, b0);
            FloatVector s1 = FloatVector.broadcast(F, x[x1 + c]);
            a1 = va.fma(s1, a1);
            b1 = vb.fma(s1, b1);
            FloatVector s2 = FloatVector.broadcast(F, x[x2 + c]);
            a2 = va.fma(s2, a2);
            b2 = vb.fma(s2, b2);
            FloatVector s3 = FloatVector.broadcast(F, x[x3 + c]);
            a3 = va.fma(s3, a3);
            b3 = vb.fma(s3, b3);
        }
        a0.intoArray(sums, t * L);
        a1.intoArray(sums, (t + 1) * L);
        a2.intoArray(sums, (t + 2) * L);
        a3.intoArray(sums, (t + 3) * L);
        b0.intoArray(sums, (n + t) * L);
        b1.intoArray(sums, (n + t + 1) * L);
        b2.intoArray(sums, (n + t + 2) * L);
        b3.intoArray(sums, (n + t + 3) * L);
    }

    /** sums[t·L + lane] = Σ_c w[c·L + lane] · x[t·padded + c] for the n tokens of x. */
    static void dot(float[] w, int padded, float[] x, int n, float[] sums) {
        int t = 0;
        for (; t + 4 <= n; t += 4) {
            four(w, padded, x, t, sums);
        }
        for (; t + 2 <= n; t += 2) {
            two(w, padded, x, t, sums, 0);
        }
        if (t < n) {
            one(w, padded, x, t, sums, 0);
        }
    }

    /** sums[(first + t)·L + lane] for token t. */
    private static void one(float[] w, int padded, float[] x, int t, float[] sums, int first) {
        FloatVector a0 = FloatVector.zero(F);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        int xb = t * padded;
        int c = 0;
        for (; c + 4 <= padded; c += 4) {
            int o = c * L;
            a0 = FloatVector.fromArray(F, w, o).fma(FloatVector.broadcast(F, x[xb + c]), a0);
            a1 = FloatVector.fromArray(F, w, o + L).fma(FloatVector.broadcast(F, x[xb + c + 1]), a1);
            a2 = FloatVector.fromArray(F, w, o + 2 * L).fma(FloatVector.broadcast(F, x[xb + c + 2]), a2);
            a3 = FloatVector.fromArray(F, w, o + 3 * L).fma(FloatVector.broadcast(F, x[xb + c + 3]), a3);
        }
        for (; c < padded; c++) {
            a0 = FloatVector.fromArray(F, w, c * L).fma(FloatVector.broadcast(F, x[xb + c]), a0);
        }
        a0.add(a1).add(a2.add(a3)).intoArray(sums, (first + t) * L);
    }

    /** sums[(first + t)·L + lane] and the next token's. */
    private static void two(float[] w, int padded, float[] x, int t, float[] sums, int first) {
        FloatVector a0 = FloatVector.zero(F);
        FloatVector a1 = a0;
        FloatVector b0 = a0;
        FloatVector b1 = a0;
        int xa = t * padded;
        int xb = xa + padded;
        int c = 0;
        for (; c + 2 <= padded; c += 2) {
            FloatVector w0 = FloatVector.fromArray(F, w, c * L);
            FloatVector w1 = FloatVector.fromArray(F, w, c * L + L);
            a0 = w0.fma(FloatVector.broadcast(F, x[xa + c]), a0);
            b0 = w0.fma(FloatVector.broadcast(F, x[xb + c]), b0);
            a1 = w1.fma(FloatVector.broadcast(F, x[xa + c + 1]), a1);
            b1 = w1.fma(FloatVector.broadcast(F, x[xb + c + 1]), b1);
        }
        if (c < padded) {
            FloatVector w0 = FloatVector.fromArray(F, w, c * L);
            a0 = w0.fma(FloatVector.broadcast(F, x[xa + c]), a0);
            b0 = w0.fma(FloatVector.broadcast(F, x[xb + c]), b0);
        }
        a0.add(a1).intoArray(sums, (first + t) * L);
        b0.add(b1).intoArray(sums, (first + t + 1) * L);
    }

    private static void four(float[] w, int padded, float[] x, int t, float[] sums) {
        FloatVector a = FloatVector.zero(F);
        FloatVector b = a;
        FloatVector c2 = a;
        FloatVector d = a;
        int x0 = t * padded;
        int x1 = x0 + padded;
        int x2 = x1 + padded;
        int x3 = x2 + padded;
        for (int c = 0; c < padded; c++) {
            FloatVector wv = FloatVector.fromArray(F, w, c * L);
            a = wv.fma(FloatVector.broadcast(F, x[x0 + c]), a);
            b = wv.fma(FloatVector.broadcast(F, x[x1 + c]), b);
            c2 = wv.fma(FloatVector.broadcast(F, x[x2 + c]), c2);
            d = wv.fma(FloatVector.broadcast(F, x[x3 + c]), d);
        }
        a.intoArray(sums, t * L);
        b.intoArray(sums, (t + 1) * L);
        c2.intoArray(sums, (t + 2) * L);
        d.intoArray(sums, (t + 3) * L);
    }
}
