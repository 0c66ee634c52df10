package io.moe4j.backend.cpu;

import io.moe4j.kernel.Activation;
import io.moe4j.kernel.GateLayout;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels on the Java Vector API (256-bit float vectors, one lane per panel row). Loaded by
 * {@link KernelSelection} only after it has checked that the Vector API is there and wide enough, so that this
 * class and the ones it uses are never touched on a JVM without {@code jdk.incubator.vector}.
 *
 * <p>A single token against a 4-bit matrix takes the fused path ({@link FusedGemv}); everything else decodes one
 * panel at a time into scratch ({@link VectorPanelDecoder}) and multiplies it with the tokens
 * ({@link VectorPanelDot}).
 */
final class VectorKernels implements CpuKernels {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final int L = PanelMatrix.LANES;
    private final ScalarKernels scalar = new ScalarKernels();

    @Override
    public String name() {
        return "vector";
    }

    @Override
    public String describe(LaneCodec codec) {
        return (FusedGemv.supports(codec) ? "vectorized fused dequant-GEMV" : "vectorized panel dequant-GEMM")
                + " for " + codec.type() + " on " + F.vectorBitSize() + "-bit vectors";
    }

    @Override
    public Inputs prepare(PanelMatrix m, int expert, float[] x, int xOff, int n) {
        Inputs in = Inputs.gather(m, expert, x, xOff, n);
        return n == 1 && FusedGemv.supports(m.codec()) ? FusedInputs.of(m, expert, in) : in;
    }

    @Override
    public void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, Inputs in, float[] y, int yOff,
                         int yStride, Scratch scratch) {
        if (in instanceof FusedInputs f) {
            FusedGemv.multiply(m, expert, rowFrom, rowTo, f, y, yOff, scratch);
            return;
        }
        float[] sums = scratch.sums(in.n);
        for (int p = rowFrom / L; p * L < rowTo; p++) {
            VectorPanelDecoder.decode(m, expert, p, scratch);
            VectorPanelDot.dot(scratch.panel, in.padded, in.x, in.n, sums);
            int r = p * L;
            for (int lane = 0; lane < L && r + lane < rowTo; lane++) {
                float shard = m.shard() == null ? 1f : m.shard()[(expert * m.panels() + p) * L + lane];
                for (int t = 0; t < in.n; t++) {
                    y[yOff + t * yStride + r + lane] = sums[t * L + lane] * shard;
                }
            }
        }
    }

    /**
     * SiLU-and-mul and SwiGLU-OAI in float32 with the vector exponential; the other activations as the scalar
     * kernels compute them (in double).
     */
    @Override
    public void activate(Activation activation, GateLayout layout, float limit, int intermediate, float[] h, int hOff,
                         float[] out, int outOff) {
        if (layout == GateLayout.NONE
                || (activation != Activation.SILU_AND_MUL && activation != Activation.SWIGLU_OAI)) {
            scalar.activate(activation, layout, limit, intermediate, h, hOff, out, outOff);
            return;
        }
        float[] gate = h;
        float[] up = h;
        int gOff = hOff;
        int uOff = hOff + intermediate;
        if (layout == GateLayout.INTERLEAVED) {
            gate = new float[intermediate];
            up = new float[intermediate];
            for (int j = 0; j < intermediate; j++) {
                gate[j] = h[hOff + 2 * j];
                up[j] = h[hOff + 2 * j + 1];
            }
            gOff = 0;
            uOff = 0;
        }
        boolean oai = activation == Activation.SWIGLU_OAI;
        int j = 0;
        for (int end = F.loopBound(intermediate); j < end; j += L) {
            FloatVector g = FloatVector.fromArray(F, gate, gOff + j);
            FloatVector u = FloatVector.fromArray(F, up, uOff + j);
            FloatVector v;
            if (oai) {
                g = g.min(limit);
                u = u.max(-limit).min(limit).add(1f);
                v = g.div(g.mul(-Activation.OAI_ALPHA).lanewise(VectorOperators.EXP).add(1f)).mul(u);
            } else {
                v = g.div(g.neg().lanewise(VectorOperators.EXP).add(1f)).mul(u);
            }
            v.intoArray(out, outOff + j);
        }
        for (; j < intermediate; j++) {
            out[outOff + j] = (float) activation.gated(gate[gOff + j], up[uOff + j], limit);
        }
    }
}
