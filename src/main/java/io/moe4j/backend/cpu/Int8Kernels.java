package io.moe4j.backend.cpu;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.routing.Router;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The kernels of {@code --activations int8}: the GEMM inputs rounded to int8 blocks ({@link Q8Inputs}) and the
 * products in integer arithmetic ({@link Int8PanelDot}), for INT4, INT8 and FP4 weights; the activation between the
 * GEMMs and the router stay with the float vector kernels they wrap. Loaded by {@link KernelSelection#int8} only
 * where the Vector API runs, for layers that {@link Int8Support} accepts.
 */
final class Int8Kernels implements CpuKernels {
    private static final VectorSpecies<Float> F = VectorShapes.F;
    private static final int L = PanelMatrix.LANES;
    private final CpuKernels floats;

    Int8Kernels(CpuKernels floats) {
        this.floats = floats;
    }

    @Override
    public String name() {
        return floats.name() + "-int8";
    }

    @Override
    public Inputs prepare(PanelMatrix m, int expert, float[] x, int xOff, int n) {
        return Q8Inputs.of(m, expert, Inputs.gather(m, expert, x, xOff, n));
    }

    @Override
    public void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, Inputs in, float[] y, int yOff,
                         int yStride, Scratch s) {
        Q8Inputs q = (Q8Inputs) in;
        LaneCodec codec = m.codec();
        int[] seg = m.plan(expert).segmentWords();
        float[] out = s.panel;
        boolean fp4 = codec == LaneCodec.FP4;
        int offset = codec == LaneCodec.INT4 ? codec.offset() : 0;
        // One FP4 token may go through byte lookups (Int8PanelDot.fp4Bytes), with the panel's block scales decoded
        // first: read in its loop, they took the kernel past C2's inlining budget. Elsewhere plain E8M0 scales (no 0,
        // no 255) are read in the loop as exponent fields, as FusedGemv does.
        boolean bytes = q.byteLanes != null;
        java.lang.foreign.MemorySegment e8m0 = fp4 && m.plainE8m0() && !bytes ? m.scales() : null;
        float[] zeros = m.zeros() == null ? null : s.zeros;
        // FP4 codes are multiplied as twice their value (integers): halved once at the store.
        double unit = fp4 ? 0.5 : 1.0;
        // Without AVX-512 the 16-bit FP4 lookup is several instructions, and the two-token loop ran 6x slower than
        // one token twice (-XX:UseAVX=2, 2111 against 356 µs a token); there FP4 tokens go one at a time.
        boolean pairs = !fp4 || SlotDecode.WIDE_FP4_LOOKUP;
        for (int p = rowFrom / L; p * L < rowTo; p++) {
            if (e8m0 == null) {
                VectorScales.scales(m, expert, p, s.scales);
                flushSubnormal(s.scales, m.groups() * L);
            }
            if (zeros != null) {
                VectorScales.zeros(m, expert, p, zeros);
            }
            long base = m.wordOffset(expert, p, 0);
            long scaleAt = m.scaleIndex(expert, p, 0);
            if (bytes) {
                Int8PanelDot.fp4Bytes(m.words(), base, seg, s.scales, q.byteLanes[0], q.scales[0], out);
                store(m, expert, p, rowTo, out, 0, unit * q.post[0], y, yOff);
                continue;
            }
            int t = 0;
            for (; t + 2 <= q.n && pairs; t += 2) {
                if (codec == LaneCodec.INT8) {
                    Int8PanelDot.bytesPair(m.words(), base, seg, zeros, s.scales, q.codes[t], q.scales[t], q.sums[t],
                            q.codes[t + 1], q.scales[t + 1], q.sums[t + 1], out);
                } else {
                    Int8PanelDot.nibblesPair(m.words(), base, seg, fp4, offset, zeros, e8m0, scaleAt, s.scales,
                            q.codes[t], q.scales[t], q.sums[t], q.codes[t + 1], q.scales[t + 1], q.sums[t + 1], out);
                }
                store(m, expert, p, rowTo, out, 0, unit * q.post[t], y, yOff + t * yStride);
                store(m, expert, p, rowTo, out, L, unit * q.post[t + 1], y, yOff + (t + 1) * yStride);
            }
            if (fp4 && !pairs && q.n - t >= 2) {
                // several tokens, one at a time: the panel's codes looked up once for all of them
                short[] codes = s.codes16(seg[seg.length - 1] - seg[0], 4 * Int8PanelDot.S.length());
                Int8PanelDot.decodeFp4(m.words(), base, seg[0], seg[seg.length - 1], codes);
                for (; t < q.n; t++) {
                    Int8PanelDot.decodedFp4(codes, seg, e8m0, scaleAt, s.scales, q.codes[t], q.scales[t], out);
                    store(m, expert, p, rowTo, out, 0, unit * q.post[t], y, yOff + t * yStride);
                }
            }
            for (; t < q.n; t++) {
                if (codec == LaneCodec.INT8) {
                    Int8PanelDot.bytes(m.words(), base, seg, zeros, s.scales, q.codes[t], q.scales[t], q.sums[t], out);
                } else {
                    Int8PanelDot.nibbles(m.words(), base, seg, fp4, offset, zeros, e8m0, scaleAt, s.scales,
                            q.codes[t], q.scales[t], q.sums[t], out);
                }
                store(m, expert, p, rowTo, out, 0, unit * q.post[t], y, yOff + t * yStride);
            }
        }
    }

    /**
     * Block scales whose float is subnormal (E8M0 code 0, 2^-127, or a tiny F32 scale) as 0: the weights they
     * scale lie below float's normal range (as {@link LaneCodec#normalCode} treats BF16 and F32 subnormals), and the
     * kernels compute with normal floats only. NaN stays NaN.
     */
    private static void flushSubnormal(float[] scales, int n) {
        for (int i = 0; i < n; i += L) {
            IntVector bits = FloatVector.fromArray(F, scales, i).reinterpretAsInts();
            bits.blend(0, bits.and(0x7F800000).eq(0)).reinterpretAsFloats().intoArray(scales, i);
        }
    }

    /** y = out · post · shard, in double so that a power of two 2^-K under float's normal range stays exact. */
    private static void store(PanelMatrix m, int expert, int p, int rowTo, float[] out, int from, double post,
                              float[] y, int at) {
        int r = p * L;
        for (int lane = 0; lane < L && r + lane < rowTo; lane++) {
            double shard = m.shard() == null ? 1.0 : m.shard()[(expert * m.panels() + p) * L + lane];
            y[at + r + lane] = (float) (out[from + lane] * post * shard);
        }
    }

    @Override
    public void activate(Activation activation, GateLayout layout, float limit, int intermediate, float[] h, int hOff,
                         float[] out, int outOff) {
        floats.activate(activation, layout, limit, intermediate, h, hOff, out, outOff);
    }

    @Override
    public void addScaled(float scale, float[] y, int yOff, float[] out, int outOff, int n) {
        floats.addScaled(scale, y, yOff, out, outOff, n);
    }

    @Override
    public RouterLogits routerLogits(Router router) {
        return floats.routerLogits(router);
    }
}
