package io.moe4j.model;

import io.moe4j.backend.cpu.VectorExp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The arithmetic of the CPU attention on the Vector API: queries against each cached key, and the weighted sum of the
 * values. Why not {@link FloatMath}'s scalar loops: a scalar dot product is one chain of dependent adds (the JIT
 * keeps a float sum in order), four cycles a key element, and a decode step at a few thousand positions of context
 * does that for every head and every position. Here a head's elements go in vectors with two sums, added once at the
 * end, so the order of the adds differs from the scalar loop's (a few ulps).
 *
 * <p>The block forms serve several queries that read the same keys and values (the query heads of one KV head, the
 * heads of MLA's shared latent): {@link #dots} loads each key once for four queries, and {@link #weightedSum} keeps a
 * strip of the output in registers over all the values instead of loading and storing it once a value. The weighted
 * sum adds each value in position order, one fused multiply-add a value in the vector part (so it is bit for bit
 * what loading, adding and storing the output once a value gives); the dots sum each query in {@link #dot}'s chunks,
 * their lanes folded in {@link LaneSums}'s fixed order (compiled or not, the same bits). A prompt's scores come from
 * keys laid out as panels of positions ({@link #toPanels}, {@link #panelDots}): a vector of positions a query, with
 * no lane reduction.
 */
final class AttentionMath {
    private static final VectorSpecies<Float> S = LaneSums.S;
    private static final int L = S.length();

    private AttentionMath() {
    }

    /** a[aOff..aOff+n) · b[bOff..bOff+n). */
    static float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        FloatVector s0 = FloatVector.zero(S);
        FloatVector s1 = s0;
        int i = 0;
        for (; i + 2 * L <= n; i += 2 * L) {
            s0 = FloatVector.fromArray(S, a, aOff + i).fma(FloatVector.fromArray(S, b, bOff + i), s0);
            s1 = FloatVector.fromArray(S, a, aOff + i + L).fma(FloatVector.fromArray(S, b, bOff + i + L), s1);
        }
        if (i + L <= n) {
            s0 = FloatVector.fromArray(S, a, aOff + i).fma(FloatVector.fromArray(S, b, bOff + i), s0);
            i += L;
        }
        float s = LaneSums.sum(s0.add(s1));
        for (; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }

    /**
     * out[outOff + r·outStride + j] = scale · (q[qOff[r] ..] · k[kOff + j·kStride ..]) over d elements, for the
     * {@code rows} queries and n keys; four queries at a time share each key's loads, each summed in {@link #dot}'s
     * chunks.
     */
    static void dots(float[] q, int[] qOff, int rows, float[] k, int kOff, int kStride, int n, int d, float scale,
                     float[] out, int outOff, int outStride) {
        int r = 0;
        for (; r + 4 <= rows; r += 4) {
            for (int j = 0; j < n; j++) {
                dots4(q, qOff[r], qOff[r + 1], qOff[r + 2], qOff[r + 3], k, kOff + j * kStride, d, scale, out,
                        outOff + r * outStride + j, outStride);
            }
        }
        for (; r < rows; r++) {
            for (int j = 0; j < n; j++) {
                out[outOff + r * outStride + j] = dot(q, qOff[r], k, kOff + j * kStride, d) * scale;
            }
        }
    }

    /** Four queries against one key, each in {@link #dot}'s order of sums. */
    private static void dots4(float[] q, int q0, int q1, int q2, int q3, float[] k, int kOff, int d, float scale,
                              float[] out, int at, int stride) {
        FloatVector a0 = FloatVector.zero(S);
        FloatVector b0 = a0;
        FloatVector a1 = a0;
        FloatVector b1 = a0;
        FloatVector a2 = a0;
        FloatVector b2 = a0;
        FloatVector a3 = a0;
        FloatVector b3 = a0;
        int i = 0;
        for (; i + 2 * L <= d; i += 2 * L) {
            FloatVector ka = FloatVector.fromArray(S, k, kOff + i);
            FloatVector kb = FloatVector.fromArray(S, k, kOff + i + L);
            a0 = FloatVector.fromArray(S, q, q0 + i).fma(ka, a0);
            b0 = FloatVector.fromArray(S, q, q0 + i + L).fma(kb, b0);
            a1 = FloatVector.fromArray(S, q, q1 + i).fma(ka, a1);
            b1 = FloatVector.fromArray(S, q, q1 + i + L).fma(kb, b1);
            a2 = FloatVector.fromArray(S, q, q2 + i).fma(ka, a2);
            b2 = FloatVector.fromArray(S, q, q2 + i + L).fma(kb, b2);
            a3 = FloatVector.fromArray(S, q, q3 + i).fma(ka, a3);
            b3 = FloatVector.fromArray(S, q, q3 + i + L).fma(kb, b3);
        }
        if (i + L <= d) {
            FloatVector ka = FloatVector.fromArray(S, k, kOff + i);
            a0 = FloatVector.fromArray(S, q, q0 + i).fma(ka, a0);
            a1 = FloatVector.fromArray(S, q, q1 + i).fma(ka, a1);
            a2 = FloatVector.fromArray(S, q, q2 + i).fma(ka, a2);
            a3 = FloatVector.fromArray(S, q, q3 + i).fma(ka, a3);
            i += L;
        }
        float s0 = LaneSums.sum(a0.add(b0));
        float s1 = LaneSums.sum(a1.add(b1));
        float s2 = LaneSums.sum(a2.add(b2));
        float s3 = LaneSums.sum(a3.add(b3));
        for (; i < d; i++) {
            float kk = k[kOff + i];
            s0 += q[q0 + i] * kk;
            s1 += q[q1 + i] * kk;
            s2 += q[q2 + i] * kk;
            s3 += q[q3 + i] * kk;
        }
        out[at] = s0 * scale;
        out[at + stride] = s1 * scale;
        out[at + 2 * stride] = s2 * scale;
        out[at + 3 * stride] = s3 * scale;
    }

    /**
     * out[oOff + i] += Σ_j p[pOff + j] · v[vOff + j·vStride + i] for i < d, j < n, each element summed in j's order;
     * a strip of four vectors of out stays in registers over all n values.
     */
    static void weightedSum(float[] p, int pOff, int n, float[] v, int vOff, int vStride, int d, float[] out,
                            int oOff) {
        int i = 0;
        for (; i + 4 * L <= d; i += 4 * L) {
            FloatVector o0 = FloatVector.fromArray(S, out, oOff + i);
            FloatVector o1 = FloatVector.fromArray(S, out, oOff + i + L);
            FloatVector o2 = FloatVector.fromArray(S, out, oOff + i + 2 * L);
            FloatVector o3 = FloatVector.fromArray(S, out, oOff + i + 3 * L);
            for (int j = 0; j < n; j++) {
                FloatVector w = FloatVector.broadcast(S, p[pOff + j]);
                int at = vOff + j * vStride + i;
                o0 = FloatVector.fromArray(S, v, at).fma(w, o0);
                o1 = FloatVector.fromArray(S, v, at + L).fma(w, o1);
                o2 = FloatVector.fromArray(S, v, at + 2 * L).fma(w, o2);
                o3 = FloatVector.fromArray(S, v, at + 3 * L).fma(w, o3);
            }
            o0.intoArray(out, oOff + i);
            o1.intoArray(out, oOff + i + L);
            o2.intoArray(out, oOff + i + 2 * L);
            o3.intoArray(out, oOff + i + 3 * L);
        }
        for (; i + L <= d; i += L) {
            FloatVector o = FloatVector.fromArray(S, out, oOff + i);
            for (int j = 0; j < n; j++) {
                o = FloatVector.fromArray(S, v, vOff + j * vStride + i).fma(FloatVector.broadcast(S, p[pOff + j]), o);
            }
            o.intoArray(out, oOff + i);
        }
        for (; i < d; i++) {
            float o = out[oOff + i];
            for (int j = 0; j < n; j++) {
                o += p[pOff + j] * v[vOff + j * vStride + i];
            }
            out[oOff + i] = o;
        }
    }

    /**
     * Below this, (score − max) gives a weight that is dropped: e^-41 ≈ 2^-59, under float32's resolution of the
     * largest weight (1) by 35 binary orders, and far enough above the smallest normal that no weight, sum or
     * normalized weight is ever subnormal (a subnormal operand costs Intel cores 50-100x).
     */
    static final float DROPPED_BELOW = -41f;

    /**
     * s[j] = e^(s[j] − max) for j in [off, off+n), in float vectors, with 0 where s[j] − max < {@link #DROPPED_BELOW};
     * returns their sum. max must be at least every s[j] (so each weight is at most 1).
     */
    static double expShifted(float[] s, int off, int n, float max) {
        FloatVector m = FloatVector.broadcast(S, max);
        FloatVector sum = FloatVector.zero(S);
        int j = 0;
        for (; j + L <= n; j += L) {
            FloatVector x = FloatVector.fromArray(S, s, off + j).sub(m);
            var dropped = x.compare(VectorOperators.LT, DROPPED_BELOW);
            FloatVector e = VectorExp.exp(x.max(DROPPED_BELOW)).blend(0f, dropped);
            e.intoArray(s, off + j);
            sum = sum.add(e);
        }
        double total = LaneSums.sum(sum);
        for (; j < n; j++) {
            float x = s[off + j] - max;
            s[off + j] = x < DROPPED_BELOW ? 0f : VectorExp.exp(x);
            total += s[off + j];
        }
        return total;
    }

    /** The largest of s[off, off+n) and {@code floor}. */
    static float max(float[] s, int off, int n, float floor) {
        FloatVector m = FloatVector.broadcast(S, floor);
        int j = 0;
        for (; j + L <= n; j += L) {
            m = m.max(FloatVector.fromArray(S, s, off + j));
        }
        float max = m.reduceLanes(VectorOperators.MAX);
        for (; j < n; j++) {
            max = Math.max(max, s[off + j]);
        }
        return max;
    }

    /**
     * Softmax of s[off, off+n) in place. With a sink, one more logit joins the denominator and its share is dropped
     * (gpt-oss's learned attention sinks). Weights under e^-41 of the largest are 0 ({@link #expShifted}).
     */
    static void softmax(float[] s, int off, int n, boolean withSink, float sink) {
        float max = max(s, off, n, withSink ? sink : Float.NEGATIVE_INFINITY);
        double total = expShifted(s, off, n, max);
        if (withSink && sink - max >= DROPPED_BELOW) {
            total += Math.exp(sink - max);
        }
        float inv = (float) (1 / total);
        FloatVector invs = FloatVector.broadcast(S, inv);
        int j = 0;
        for (; j + L <= n; j += L) {
            FloatVector.fromArray(S, s, off + j).mul(invs).intoArray(s, off + j);
        }
        for (; j < n; j++) {
            s[off + j] *= inv;
        }
    }

    /** Positions a key panel holds: one vector's lanes. */
    static final int PANEL = L;

    /**
     * Keys [n positions, d] (row j at kOff + j·kStride) as panels of {@link #PANEL} positions, dimension-major:
     * panel b's value for dimension c and position b·PANEL + lane at out[outOff + (b·d + c)·PANEL + lane]; positions
     * past n are 0. Scores against a panel are then a vector of positions with no lane reduction ({@link #panelDots}).
     */
    static void toPanels(float[] k, int kOff, int kStride, int n, int d, float[] out, int outOff) {
        int panels = Math.ceilDiv(n, PANEL);
        java.util.Arrays.fill(out, outOff, outOff + panels * d * PANEL, 0f);
        for (int j = 0; j < n; j++) {
            int base = outOff + (j / PANEL) * d * PANEL + j % PANEL;
            int row = kOff + j * kStride;
            for (int c = 0; c < d; c++) {
                out[base + c * PANEL] = k[row + c];
            }
        }
    }

    /**
     * out[outOff + r·outStride + lane] = scale · Σ_c panel[c·PANEL + lane] · x[xOff + r·d + c] for the {@code rows}
     * queries of x (rows of d) against one key panel ({@link #toPanels}): the scores of PANEL positions at once, eight
     * queries sharing each panel vector (eight independent sums, enough to keep both FMA ports busy).
     */
    static void panelDots(float[] panel, int pOff, int d, float[] x, int xOff, int rows, float scale, float[] out,
                          int outOff, int outStride) {
        FloatVector sv = FloatVector.broadcast(S, scale);
        int r = 0;
        for (; r + 8 <= rows; r += 8) {
            FloatVector a0 = FloatVector.zero(S);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            FloatVector a4 = a0;
            FloatVector a5 = a0;
            FloatVector a6 = a0;
            FloatVector a7 = a0;
            int x0 = xOff + r * d;
            for (int c = 0; c < d; c++) {
                FloatVector w = FloatVector.fromArray(S, panel, pOff + c * PANEL);
                a0 = w.fma(FloatVector.broadcast(S, x[x0 + c]), a0);
                a1 = w.fma(FloatVector.broadcast(S, x[x0 + d + c]), a1);
                a2 = w.fma(FloatVector.broadcast(S, x[x0 + 2 * d + c]), a2);
                a3 = w.fma(FloatVector.broadcast(S, x[x0 + 3 * d + c]), a3);
                a4 = w.fma(FloatVector.broadcast(S, x[x0 + 4 * d + c]), a4);
                a5 = w.fma(FloatVector.broadcast(S, x[x0 + 5 * d + c]), a5);
                a6 = w.fma(FloatVector.broadcast(S, x[x0 + 6 * d + c]), a6);
                a7 = w.fma(FloatVector.broadcast(S, x[x0 + 7 * d + c]), a7);
            }
            int at = outOff + r * outStride;
            a0.mul(sv).intoArray(out, at);
            a1.mul(sv).intoArray(out, at + outStride);
            a2.mul(sv).intoArray(out, at + 2 * outStride);
            a3.mul(sv).intoArray(out, at + 3 * outStride);
            a4.mul(sv).intoArray(out, at + 4 * outStride);
            a5.mul(sv).intoArray(out, at + 5 * outStride);
            a6.mul(sv).intoArray(out, at + 6 * outStride);
            a7.mul(sv).intoArray(out, at + 7 * outStride);
        }
        for (; r < rows; r++) {
            FloatVector a = FloatVector.zero(S);
            int x0 = xOff + r * d;
            for (int c = 0; c < d; c++) {
                a = FloatVector.fromArray(S, panel, pOff + c * PANEL).fma(FloatVector.broadcast(S, x[x0 + c]), a);
            }
            a.mul(sv).intoArray(out, outOff + r * outStride);
        }
    }
}
