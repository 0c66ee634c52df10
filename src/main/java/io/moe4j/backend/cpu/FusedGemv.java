package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

import static io.moe4j.backend.cpu.VectorSlots.fp4;
import static io.moe4j.backend.cpu.VectorSlots.int4;

/**
 * Single-token products for the 4-bit codes, the decode case that is bound by memory bandwidth: each lane word is
 * turned into 8 weight vectors by shifts and masks and multiplied straight into the input (scaled, see
 * {@link FusedInputs}); the block scale of a segment is applied once to its partial sum. Nothing is stored but the
 * 8 results of each panel.
 */
final class FusedGemv {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int L = PanelMatrix.LANES;

    private FusedGemv() {
    }

    static boolean supports(LaneCodec codec) {
        return codec == LaneCodec.FP4 || codec == LaneCodec.INT4;
    }

    static void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, FusedInputs in, float[] y, int yOff) {
        ColumnPlan plan = m.plan(expert);
        int[] seg = plan.segmentWords();
        boolean ints = m.codec() == LaneCodec.INT4;
        for (int p = rowFrom / L; p * L < rowTo; p++) {
            FloatVector acc = FloatVector.zero(F);
            long base = m.wordOffset(expert, p, 0);
            for (int g = 0; g < seg.length - 1; g++) {
                if (seg[g] == seg[g + 1]) {
                    continue;
                }
                FloatVector sum = ints
                        ? int4Segment(m.words(), base, seg[g], seg[g + 1], in.scaled)
                        : fp4Segment(m.words(), base, seg[g], seg[g + 1], in.scaled);
                if (ints) {
                    // Σ (p − 8 − zero)·x = Σ p·x − (8 + zero)·Σ x.
                    FloatVector off = VectorScales.zero(m, expert, p, g).add(LaneCodec.INT4.offset());
                    sum = off.mul(-in.segmentSums[g]).add(sum);
                }
                acc = m.scales() == null ? acc.add(sum) : sum.fma(VectorScales.scale(m, expert, p, g), acc);
            }
            FloatVector post = FloatVector.broadcast(F, in.post);
            if (m.shard() != null) {
                post = post.mul(FloatVector.fromArray(F, m.shard(), (expert * m.panels() + p) * L));
            }
            VectorPanelDot.store(acc.mul(post), y, yOff, p, rowTo);
        }
    }

    private static FloatVector fp4Segment(MemorySegment s, long base, int w0, int w1, float[] x) {
        FloatVector a0 = FloatVector.zero(F);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int w = w0; w < w1; w++) {
            IntVector v = IntVector.fromMemorySegment(I, s, base + 32L * w, LE);
            int c = w * 8;
            a0 = fp4(v, 0).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c]), a0);
            a1 = fp4(v, 1).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 1]), a1);
            a2 = fp4(v, 2).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 2]), a2);
            a3 = fp4(v, 3).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 3]), a3);
            a0 = fp4(v, 4).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 4]), a0);
            a1 = fp4(v, 5).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 5]), a1);
            a2 = fp4(v, 6).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 6]), a2);
            a3 = fp4(v, 7).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 7]), a3);
        }
        return a0.add(a1).add(a2.add(a3));
    }

    private static FloatVector int4Segment(MemorySegment s, long base, int w0, int w1, float[] x) {
        FloatVector a0 = FloatVector.zero(F);
        FloatVector a1 = a0;
        FloatVector a2 = a0;
        FloatVector a3 = a0;
        for (int w = w0; w < w1; w++) {
            IntVector v = IntVector.fromMemorySegment(I, s, base + 32L * w, LE);
            int c = w * 8;
            a0 = int4(v, 0).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c]), a0);
            a1 = int4(v, 1).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 1]), a1);
            a2 = int4(v, 2).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 2]), a2);
            a3 = int4(v, 3).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 3]), a3);
            a0 = int4(v, 4).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 4]), a0);
            a1 = int4(v, 5).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 5]), a1);
            a2 = int4(v, 6).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 6]), a2);
            a3 = int4(v, 7).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 7]), a3);
        }
        return a0.add(a1).add(a2.add(a3));
    }
}
