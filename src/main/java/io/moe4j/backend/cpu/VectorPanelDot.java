package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * Multiplies a decoded panel (scratch[c·8 + lane], {@link VectorPanelDecoder}) with up to four tokens at a time: each
 * weight vector is loaded once and meets every token of the tile, whose inputs are broadcast. A single token keeps
 * four partial sums so that consecutive fused multiply-adds do not wait on each other.
 */
final class VectorPanelDot {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final int L = PanelMatrix.LANES;

    private VectorPanelDot() {
    }

    /**
     * y[yOff + t·yStride + p·8 + lane] = shard[lane] · Σ_c w[c·8 + lane] · x[t·padded + c] for the tokens of in, for
     * the lanes whose row is below rowTo.
     */
    static void dot(float[] w, int padded, Inputs in, FloatVector shard, float[] y, int yOff, int yStride, int panel,
                    int rowTo) {
        float[] x = in.x;
        int t = 0;
        for (; t + 4 <= in.n; t += 4) {
            four(w, padded, x, t, shard, y, yOff, yStride, panel, rowTo);
        }
        for (; t + 2 <= in.n; t += 2) {
            two(w, padded, x, t, shard, y, yOff, yStride, panel, rowTo);
        }
        if (t < in.n) {
            one(w, padded, x, t, shard, y, yOff, yStride, panel, rowTo);
        }
    }

    private static void one(float[] w, int padded, float[] x, int t, FloatVector shard, float[] y, int yOff,
                            int yStride, int panel, int rowTo) {
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
        store(a0.add(a1).add(a2.add(a3)).mul(shard), y, yOff + t * yStride, panel, rowTo);
    }

    private static void two(float[] w, int padded, float[] x, int t, FloatVector shard, float[] y, int yOff,
                            int yStride, int panel, int rowTo) {
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
        store(a0.add(a1).mul(shard), y, yOff + t * yStride, panel, rowTo);
        store(b0.add(b1).mul(shard), y, yOff + (t + 1) * yStride, panel, rowTo);
    }

    private static void four(float[] w, int padded, float[] x, int t, FloatVector shard, float[] y, int yOff,
                             int yStride, int panel, int rowTo) {
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
        store(a.mul(shard), y, yOff + t * yStride, panel, rowTo);
        store(b.mul(shard), y, yOff + (t + 1) * yStride, panel, rowTo);
        store(c2.mul(shard), y, yOff + (t + 2) * yStride, panel, rowTo);
        store(d.mul(shard), y, yOff + (t + 3) * yStride, panel, rowTo);
    }

    /** Stores the 8 rows of the panel, or those below rowTo for the last panel. */
    static void store(FloatVector v, float[] y, int rowBase, int panel, int rowTo) {
        int r = panel * L;
        if (r + L <= rowTo) {
            v.intoArray(y, rowBase + r);
        } else {
            VectorMask<Float> m = F.indexInRange(r, rowTo);
            v.intoArray(y, rowBase + r, m);
        }
    }
}
