package io.moe4j.backend.cpu;

import io.moe4j.routing.Router;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The router's logits on the Java Vector API: four float weights widened to a 256-bit double vector per load, the
 * tokens widened once per call, multiply then add (the product is exact, so this is the scalar lane order to the
 * bit, and needs no FMA unit). A lone token takes four experts per pass over its row (four independent sums);
 * batches go four tokens at a time, each widened weight vector shared by the four. Loaded by
 * {@link VectorKernels} only, so never on a JVM without {@code jdk.incubator.vector}.
 */
final class VectorRouterLogits extends RouterLogits {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_128;
    private static final VectorSpecies<Double> D = DoubleVector.SPECIES_256;
    /**
     * Tokens that share each widened weight vector, one accumulator each. Measured (in cache, one thread): 4 tokens
     * x 1 expert ran ~8.5 GMAC/s; 8 x 1 no faster; 4 x 2 and 2 x 4 slower (C2 unrolls the loop and spills the
     * eight accumulators to the stack).
     */
    private static final int TOKENS = 4;
    /**
     * Experts per pass for a single token: four independent sums sharing each widened x vector. Each weight is used
     * once here, so the widening (vcvtps2pd from a register, which C2 emits, ~1.6x slower on Zen 3 than the
     * memory-operand form C compilers use) bounds the loop: ~5.5 GMAC/s.
     */
    private static final int EXPERTS = 4;

    VectorRouterLogits(Router router) {
        super(router);
        assert D.length() == LANES;
    }

    @Override
    String name() {
        return "vector";
    }

    @Override
    void compute(float[] x, int tokens, double[] out) {
        double[] wide = new double[Math.min(tokens, TOKENS) * hidden];
        double[] lanes = new double[TOKENS * LANES];
        int t = 0;
        for (; t + TOKENS <= tokens; t += TOKENS) {
            widen(x, t * hidden, TOKENS * hidden, wide);
            for (int e = 0; e < experts; e++) {
                fourTokens(x, t, e, wide, lanes, out);
            }
        }
        for (; t < tokens; t++) {
            widen(x, t * hidden, hidden, wide);
            int e = 0;
            for (; e + EXPERTS <= experts; e += EXPERTS) {
                fourExperts(x, t, e, wide, lanes, out);
            }
            for (; e < experts; e++) {
                out[t * experts + e] = dot(x, t * hidden, e);
            }
        }
    }

    /** x[from, from + n) as doubles in wide[0, n). */
    private static void widen(float[] x, int from, int n, double[] wide) {
        int i = 0;
        for (; i + LANES <= n; i += LANES) {
            widen(x, from + i).intoArray(wide, i);
        }
        for (; i < n; i++) {
            wide[i] = x[from + i];
        }
    }

    private static DoubleVector widen(float[] v, int offset) {
        return (DoubleVector) FloatVector.fromArray(F, v, offset).convertShape(VectorOperators.F2D, D, 0);
    }

    /** Expert e for tokens t .. t+3, whose rows are widened in wide. */
    private void fourTokens(float[] x, int t, int e, double[] wide, double[] lanes, double[] out) {
        int whole = hidden & -LANES;
        int row = e * hidden;
        int x1 = hidden;
        int x2 = 2 * hidden;
        int x3 = 3 * hidden;
        DoubleVector a0 = DoubleVector.zero(D);
        DoubleVector a1 = a0;
        DoubleVector a2 = a0;
        DoubleVector a3 = a0;
        for (int c = 0; c < whole; c += LANES) {
            DoubleVector w = widen(weight, row + c);
            a0 = a0.add(w.mul(DoubleVector.fromArray(D, wide, c)));
            a1 = a1.add(w.mul(DoubleVector.fromArray(D, wide, x1 + c)));
            a2 = a2.add(w.mul(DoubleVector.fromArray(D, wide, x2 + c)));
            a3 = a3.add(w.mul(DoubleVector.fromArray(D, wide, x3 + c)));
        }
        a0.intoArray(lanes, 0);
        a1.intoArray(lanes, LANES);
        a2.intoArray(lanes, 2 * LANES);
        a3.intoArray(lanes, 3 * LANES);
        for (int j = 0; j < TOKENS; j++) {
            int l = j * LANES;
            out[(t + j) * experts + e] = finish(lanes[l], lanes[l + 1], lanes[l + 2], lanes[l + 3], x,
                    (t + j) * hidden, e);
        }
    }

    /** Experts e .. e+3 for token t, whose row is widened in wide. */
    private void fourExperts(float[] x, int t, int e, double[] wide, double[] lanes, double[] out) {
        int whole = hidden & -LANES;
        int r0 = e * hidden;
        int r1 = r0 + hidden;
        int r2 = r1 + hidden;
        int r3 = r2 + hidden;
        DoubleVector a0 = DoubleVector.zero(D);
        DoubleVector a1 = a0;
        DoubleVector a2 = a0;
        DoubleVector a3 = a0;
        for (int c = 0; c < whole; c += LANES) {
            DoubleVector v = DoubleVector.fromArray(D, wide, c);
            a0 = a0.add(widen(weight, r0 + c).mul(v));
            a1 = a1.add(widen(weight, r1 + c).mul(v));
            a2 = a2.add(widen(weight, r2 + c).mul(v));
            a3 = a3.add(widen(weight, r3 + c).mul(v));
        }
        a0.intoArray(lanes, 0);
        a1.intoArray(lanes, LANES);
        a2.intoArray(lanes, 2 * LANES);
        a3.intoArray(lanes, 3 * LANES);
        for (int j = 0; j < EXPERTS; j++) {
            int l = j * LANES;
            out[t * experts + e + j] = finish(lanes[l], lanes[l + 1], lanes[l + 2], lanes[l + 3], x, t * hidden,
                    e + j);
        }
    }
}
