package io.moe4j.model;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The per-head arithmetic of the CPU attention on the Vector API: a query against each cached key, and the weighted
 * sum of the values. Why not {@link FloatMath}'s scalar loops: a scalar dot product is one chain of dependent adds
 * (the JIT keeps a float sum in order), four cycles a key element, and a decode step at a few thousand positions of
 * context does that for every head and every position. Here a head's elements go in vectors with two sums, added
 * once at the end, so the order of the adds differs from the scalar loop's (a few ulps).
 */
final class AttentionMath {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
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
        float s = s0.add(s1).reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }

    /** out[oOff..oOff+n) += w · v[vOff..vOff+n). */
    static void axpy(float w, float[] v, int vOff, float[] out, int oOff, int n) {
        FloatVector wv = FloatVector.broadcast(S, w);
        int i = 0;
        for (; i + L <= n; i += L) {
            FloatVector.fromArray(S, v, vOff + i).fma(wv, FloatVector.fromArray(S, out, oOff + i))
                    .intoArray(out, oOff + i);
        }
        for (; i < n; i++) {
            out[oOff + i] += w * v[vOff + i];
        }
    }
}
