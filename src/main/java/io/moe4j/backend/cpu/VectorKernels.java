package io.moe4j.backend.cpu;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.routing.Router;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels on the Java Vector API ({@link VectorShapes}: 512-bit float vectors on AVX-512, else 256-bit; one
 * lane per panel row). Loaded by {@link KernelSelection} only after it has checked that the Vector API is there and
 * wide enough, so that this class and the ones it uses are never touched on a JVM without {@code jdk.incubator.vector}.
 *
 * <p>Up to {@value #FUSED_TOKENS} tokens of an expert take the fused path ({@link FusedGemv}); larger batches
 * decode two panels at a time into scratch ({@link VectorPanelDecoder}) and multiply them with the tokens
 * ({@link VectorPanelDot}).
 */
final class VectorKernels implements CpuKernels {
    private static final VectorSpecies<Float> F = VectorShapes.F;
    private static final int L = PanelMatrix.LANES;
    /**
     * Up to this many tokens of one expert are multiplied by the fused kernels, each decoding the panel again while
     * it is in cache (FP4 and INT4 once per pair of tokens); beyond, decoding once into scratch and multiplying all
     * tokens from there is cheaper. Measured on the gpt-oss-20b preset, 8 tokens with fixed routing (experts get
     * 1 to 5 tokens): 4 instead of 3 took MXFP4 from 59 to 44–52 ms per call and W4A16 from 177–226 to 43–50 ms.
     */
    static final int FUSED_TOKENS = 4;
    /**
     * Lanes 2i of two vectors read as one (0 .. L−1 from the first, L .. 2L−1 wrapped to the second): an interleaved
     * gate|up row's gates; {@link #ODDS} its ups. Splitting them in registers replaced two arrays a token and expert
     * (23 KB at gpt-oss's width), whose fresh pages cost up to 0.4 ms a layer call on the Zen 5 VM.
     */
    private static final VectorShuffle<Float> EVENS = VectorShuffle.fromOp(F, i -> 2 * i);
    private static final VectorShuffle<Float> ODDS = VectorShuffle.fromOp(F, i -> 2 * i + 1);
    private final ScalarKernels scalar = new ScalarKernels();

    @Override
    public RouterLogits routerLogits(Router router) {
        return new VectorRouterLogits(router);
    }

    @Override
    public String name() {
        return "vector";
    }

    /**
     * The plain loop's bits in vectors: C2 does not vectorize that loop itself (out and y may be one array), and it ran
     * 9x slower (a scratch loop on the Zen 5 VM, one thread: 7.0 against 0.77 µs for 8 × 2048 values).
     */
    @Override
    public void addScaled(float scale, float[] y, int yOff, float[] out, int outOff, int n) {
        int i = 0;
        for (int end = n - F.length(); i <= end; i += F.length()) {
            FloatVector.fromArray(F, y, yOff + i).mul(scale).add(FloatVector.fromArray(F, out, outOff + i))
                    .intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] += scale * y[yOff + i];
        }
    }

    @Override
    public Inputs prepare(PanelMatrix m, int expert, float[] x, int xOff, int n) {
        Inputs in = Inputs.gather(m, expert, x, xOff, n);
        return n <= FUSED_TOKENS ? FusedInputs.of(m, expert, in) : in;
    }

    @Override
    public void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, Inputs in, float[] y, int yOff,
                         int yStride, Scratch scratch) {
        if (in instanceof FusedInputs f) {
            FusedGemv.multiply(m, expert, rowFrom, rowTo, f, y, yOff, yStride, scratch);
            return;
        }
        float[] sums = scratch.sums(2 * in.n);
        int p = rowFrom / L;
        int last = (rowTo - 1) / L;
        for (; p + 1 <= last; p += 2) {
            // Two panels at a time: eight partial sums for four tokens keep both FMA pipes busy.
            VectorPanelDecoder.decode(m, expert, p, scratch, scratch.panel);
            VectorPanelDecoder.decode(m, expert, p + 1, scratch, scratch.panel2);
            VectorPanelDot.dot(scratch.panel, scratch.panel2, in.padded, in.x, in.n, sums);
            store(m, expert, p, rowTo, sums, 0, in.n, y, yOff, yStride);
            store(m, expert, p + 1, rowTo, sums, in.n, in.n, y, yOff, yStride);
        }
        if (p <= last) {
            VectorPanelDecoder.decode(m, expert, p, scratch, scratch.panel);
            VectorPanelDot.dot(scratch.panel, in.padded, in.x, in.n, sums);
            store(m, expert, p, rowTo, sums, 0, in.n, y, yOff, yStride);
        }
    }

    /** Row sums of panel p for n tokens, sums[(first + t)·L + lane], times the shard scales into y. */
    private static void store(PanelMatrix m, int expert, int p, int rowTo, float[] sums, int first, int n, float[] y,
                              int yOff, int yStride) {
        int r = p * L;
        for (int lane = 0; lane < L && r + lane < rowTo; lane++) {
            float shard = m.shard() == null ? 1f : m.shard()[(expert * m.panels() + p) * L + lane];
            for (int t = 0; t < n; t++) {
                y[yOff + t * yStride + r + lane] = sums[(first + t) * L + lane] * shard;
            }
        }
    }

    /**
     * SiLU-and-mul and SwiGLU-OAI in float32 with {@link VectorExp} (the same bits compiled or not); the other
     * activations as the scalar kernels compute them (in double).
     */
    @Override
    public void activate(Activation activation, GateLayout layout, float limit, int intermediate, float[] h, int hOff,
                         float[] out, int outOff) {
        if (layout == GateLayout.NONE
                || (activation != Activation.SILU_AND_MUL && activation != Activation.SWIGLU_OAI)) {
            scalar.activate(activation, layout, limit, intermediate, h, hOff, out, outOff);
            return;
        }
        boolean interleaved = layout == GateLayout.INTERLEAVED;
        // Gate and up: rows j and intermediate + j, or 2j and 2j + 1 (split from two vectors of pairs, no copy).
        int gStep = interleaved ? 2 : 1;
        int uOff = interleaved ? hOff + 1 : hOff + intermediate;
        boolean oai = activation == Activation.SWIGLU_OAI;
        int j = 0;
        for (int end = F.loopBound(intermediate); j < end; j += L) {
            FloatVector g;
            FloatVector u;
            if (interleaved) {
                FloatVector lo = FloatVector.fromArray(F, h, hOff + 2 * j);
                FloatVector hi = FloatVector.fromArray(F, h, hOff + 2 * j + L);
                g = lo.rearrange(EVENS, hi);
                u = lo.rearrange(ODDS, hi);
            } else {
                g = FloatVector.fromArray(F, h, hOff + j);
                u = FloatVector.fromArray(F, h, uOff + j);
            }
            FloatVector v;
            if (oai) {
                g = g.min(limit);
                u = u.max(-limit).min(limit).add(1f);
                v = g.div(VectorExp.exp(g.mul(-Activation.OAI_ALPHA)).add(1f)).mul(u);
            } else {
                v = g.div(VectorExp.exp(g.neg()).add(1f)).mul(u);
            }
            v.intoArray(out, outOff + j);
        }
        for (; j < intermediate; j++) {
            out[outOff + j] = (float) activation.gated(h[hOff + gStep * j], h[uOff + gStep * j], limit);
        }
    }
}
