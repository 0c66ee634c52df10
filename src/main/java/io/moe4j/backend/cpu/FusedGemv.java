package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * Single-token products for the 4-bit codes, the decode case that is bound by memory bandwidth: each lane word is
 * turned into 8 weight vectors by shifts and masks (the float bits read as value·2^-bias, see {@link LaneCodec})
 * and multiplied straight into the input, which {@link FusedInputs} scaled by 2^K to match; a segment's block scale
 * meets its partial sum once. Nothing is stored but the 8 results of each panel.
 *
 * <p>The slot extractions are written out with their constants, inline in one loop: shifts by immediates are cheap
 * where shifts by a variable are not, and no vector crosses a method boundary, where the JIT might box it.
 */
final class FusedGemv {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int L = PanelMatrix.LANES;
    private static final VectorOperators.Binary SHL = VectorOperators.LSHL;
    private static final VectorOperators.Binary SHR = VectorOperators.LSHR;

    private FusedGemv() {
    }

    static boolean supports(LaneCodec codec) {
        return codec == LaneCodec.FP4 || codec == LaneCodec.INT4;
    }

    static void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, FusedInputs in, float[] y, int yOff,
                         Scratch s) {
        for (int p = rowFrom / L; p * L < rowTo; p++) {
            VectorScales.scales(m, expert, p, s.scales);
            float[] out = s.panel;
            if (m.codec() == LaneCodec.FP4) {
                fp4(m.words(), m.wordOffset(expert, p, 0), m.plan(expert).segmentWords(), in.scaled, s.scales, out);
            } else {
                VectorScales.zeros(m, expert, p, s.zeros);
                int4(m.words(), m.wordOffset(expert, p, 0), m.plan(expert).segmentWords(), in.scaled,
                        in.segmentSums, s.scales, s.zeros, out);
            }
            int r = p * L;
            for (int lane = 0; lane < L && r + lane < rowTo; lane++) {
                float shard = m.shard() == null ? 1f : m.shard()[(expert * m.panels() + p) * L + lane];
                y[yOff + r + lane] = out[lane] * shard * in.post;
            }
        }
    }

    /** out[0, 8) = Σ_g scale_g · Σ_{c in g} w_c · x_c for one panel of FP4 lane words (slot layout: LaneCodec.FP4). */
    private static void fp4(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        IntVector mask = IntVector.broadcast(I, 0x81C00000);
        IntVector low2 = IntVector.broadcast(I, 0x00C00000);
        IntVector top = IntVector.broadcast(I, 0x01000000);
        IntVector sign = IntVector.broadcast(I, 0x80000000);
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int c = w * 8;
                // Slots 0..5: sign 9 bits above the magnitude, one shift puts both at bits 31 and 22..24.
                a0 = v.lanewise(SHL, 22).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = v.lanewise(SHL, 19).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 1]), a1);
                a2 = v.lanewise(SHL, 16).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 2]), a2);
                a3 = v.lanewise(SHL, 6).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 3]), a3);
                a0 = v.lanewise(SHL, 3).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 4]), a0);
                a1 = v.and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 5]), a1);
                // Slots 6 and 7: low magnitude bits, top magnitude bit and sign moved one by one.
                IntVector s6 = v.lanewise(SHL, 12).and(low2).or(v.lanewise(SHL, 11).and(top))
                        .or(v.lanewise(SHL, 17).and(sign));
                a2 = s6.reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 6]), a2);
                IntVector s7 = v.lanewise(SHR, 4).and(low2).or(v.lanewise(SHR, 5).and(top))
                        .or(v.lanewise(SHL, 1).and(sign));
                a3 = s7.reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 7]), a3);
            }
            FloatVector sum = a0.add(a1).add(a2.add(a3));
            acc = sum.fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /**
     * out[0, 8) = Σ_g scale_g · (Σ_{c in g} p_c · x_c − (8 + zero_g) · Σ_{c in g} x_c) for one panel of INT4 lane
     * words (offset-binary nibbles p = code + 8, nibble j of a word in bits 4j..4j+3).
     */
    private static void int4(MemorySegment words, long base, int[] seg, float[] x, float[] sums, float[] scales,
                             float[] zeros, float[] out) {
        IntVector mask = IntVector.broadcast(I, 0x00780000);
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int c = w * 8;
                // Nibble j to float bits 19..22: p·2^-130.
                a0 = v.lanewise(SHL, 19).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = v.lanewise(SHL, 15).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 1]), a1);
                a2 = v.lanewise(SHL, 11).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 2]), a2);
                a3 = v.lanewise(SHL, 7).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 3]), a3);
                a0 = v.lanewise(SHL, 3).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 4]), a0);
                a1 = v.lanewise(SHR, 1).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 5]), a1);
                a2 = v.lanewise(SHR, 5).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 6]), a2);
                a3 = v.lanewise(SHR, 9).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 7]), a3);
            }
            FloatVector sum = a0.add(a1).add(a2.add(a3));
            FloatVector off = FloatVector.fromArray(F, zeros, g * L).add(LaneCodec.INT4.offset());
            sum = off.mul(-sums[g]).add(sum);
            acc = sum.fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }
}
