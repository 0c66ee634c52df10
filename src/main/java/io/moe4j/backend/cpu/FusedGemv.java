package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * Products with a few tokens, the decode case that is bound by memory bandwidth: each lane word is turned into its
 * slots' weight vectors by shifts and masks (the float bits read as value·2^-bias, see {@link LaneCodec})
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

    /**
     * y[yOff + t·yStride + r] for rows [rowFrom, rowTo) and the tokens of in; with several tokens each panel is
     * decoded once per token while its words are still in cache.
     */
    static void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, FusedInputs in, float[] y, int yOff,
                         int yStride, Scratch s) {
        MemorySegment words = m.words();
        int[] seg = m.plan(expert).segmentWords();
        float[] out = s.panel;
        for (int p = rowFrom / L; p * L < rowTo; p++) {
            VectorScales.scales(m, expert, p, s.scales);
            if (m.codec().offset() != 0) {
                VectorScales.zeros(m, expert, p, s.zeros);
            }
            long base = m.wordOffset(expert, p, 0);
            for (int t = 0; t < in.n; t++) {
                float[] x = in.scaled[t];
                switch (m.codec()) {
                    case FP4 -> fp4(words, base, seg, x, s.scales, out);
                    case FP6_E3M2 -> fp6(words, base, seg, x, s.scales, out, true);
                    case FP6_E2M3 -> fp6(words, base, seg, x, s.scales, out, false);
                    case FP8_E4M3 -> fp8(words, base, seg, x, s.scales, out, true);
                    case FP8_E5M2 -> fp8(words, base, seg, x, s.scales, out, false);
                    case F16 -> f16(words, base, seg, x, s.scales, out);
                    case BF16 -> bf16(words, base, seg, x, s.scales, out);
                    case F32 -> f32(words, base, seg, x, s.scales, out);
                    case INT4 -> int4(words, base, seg, x, in.segmentSums[t], s.scales, s.zeros, out);
                    case INT8 -> int8(words, base, seg, x, in.segmentSums[t], s.scales, s.zeros, out);
                }
                int r = p * L;
                float post = in.post[t];
                for (int lane = 0; lane < L && r + lane < rowTo; lane++) {
                    float shard = m.shard() == null ? 1f : m.shard()[(expert * m.panels() + p) * L + lane];
                    y[yOff + t * yStride + r + lane] = out[lane] * shard * post;
                }
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
    /** FP6, 5 slots a word (LaneCodec): magnitude j at 5j to float bits 21.. (E3M2) or 20.. (E2M3), sign 27 + j. */
    private static void fp6(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out,
                            boolean e3m2) {
        IntVector mag = IntVector.broadcast(I, e3m2 ? 0x03E00000 : 0x01F00000);
        IntVector sign = IntVector.broadcast(I, 0x80000000);
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int c = w * 5;
                IntVector s0 = e3m2 ? v.lanewise(SHL, 21) : v.lanewise(SHL, 20);
                IntVector s1 = e3m2 ? v.lanewise(SHL, 16) : v.lanewise(SHL, 15);
                IntVector s2 = e3m2 ? v.lanewise(SHL, 11) : v.lanewise(SHL, 10);
                IntVector s3 = e3m2 ? v.lanewise(SHL, 6) : v.lanewise(SHL, 5);
                IntVector s4 = e3m2 ? v.lanewise(SHL, 1) : v;
                a0 = s0.and(mag).or(v.lanewise(SHL, 4).and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = s1.and(mag).or(v.lanewise(SHL, 3).and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c + 1]), a1);
                a0 = s2.and(mag).or(v.lanewise(SHL, 2).and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c + 2]), a0);
                a1 = s3.and(mag).or(v.lanewise(SHL, 1).and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c + 3]), a1);
                a0 = s4.and(mag).or(v.and(sign)).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 4]), a0);
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** FP8, 4 slots a word (LaneCodec): magnitude j at 7j to float bits 20.. (E4M3) or 21.. (E5M2), sign 28 + j. */
    private static void fp8(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out,
                            boolean e4m3) {
        IntVector mag = IntVector.broadcast(I, e4m3 ? 0x07F00000 : 0x0FE00000);
        IntVector sign = IntVector.broadcast(I, 0x80000000);
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int c = w * 4;
                IntVector s0 = e4m3 ? v.lanewise(SHL, 20) : v.lanewise(SHL, 21);
                IntVector s1 = e4m3 ? v.lanewise(SHL, 13) : v.lanewise(SHL, 14);
                IntVector s2 = e4m3 ? v.lanewise(SHL, 6) : v.lanewise(SHL, 7);
                IntVector s3 = e4m3 ? v.lanewise(SHR, 1) : v;
                a0 = s0.and(mag).or(v.lanewise(SHL, 3).and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = s1.and(mag).or(v.lanewise(SHL, 2).and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c + 1]), a1);
                a2 = s2.and(mag).or(v.lanewise(SHL, 1).and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c + 2]), a2);
                a3 = s3.and(mag).or(v.and(sign)).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 3]), a3);
            }
            acc = a0.add(a1).add(a2.add(a3)).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** IEEE half, 2 slots a word: magnitude j at 15j to float bits 13..27, sign 30 + j. */
    private static void f16(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        IntVector mag = IntVector.broadcast(I, 0x0FFFE000);
        IntVector sign = IntVector.broadcast(I, 0x80000000);
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int c = w * 2;
                a0 = v.lanewise(SHL, 13).and(mag).or(v.lanewise(SHL, 1).and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = v.lanewise(SHR, 2).and(mag).or(v.and(sign)).reinterpretAsFloats()
                        .fma(FloatVector.broadcast(F, x[c + 1]), a1);
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** bfloat16, 2 slots a word: the halves are the top halves of floats. */
    private static void bf16(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        IntVector high = IntVector.broadcast(I, 0xFFFF0000);
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int c = w * 2;
                a0 = v.lanewise(SHL, 16).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = v.and(high).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 1]), a1);
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    private static void f32(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            int w = seg[g];
            for (; w + 1 < seg[g + 1]; w += 2) {
                a0 = FloatVector.fromMemorySegment(F, words, base + 32L * w, LE).fma(FloatVector.broadcast(F, x[w]), a0);
                a1 = FloatVector.fromMemorySegment(F, words, base + 32L * w + 32, LE)
                        .fma(FloatVector.broadcast(F, x[w + 1]), a1);
            }
            if (w < seg[g + 1]) {
                a0 = FloatVector.fromMemorySegment(F, words, base + 32L * w, LE).fma(FloatVector.broadcast(F, x[w]), a0);
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** INT8: offset-binary byte j (p = code + 128) to float bits 15..22, p·2^-134; offset and zero as for INT4. */
    private static void int8(MemorySegment words, long base, int[] seg, float[] x, float[] sums, float[] scales,
                             float[] zeros, float[] out) {
        IntVector mask = IntVector.broadcast(I, 0x007F8000);
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int c = w * 4;
                a0 = v.lanewise(SHL, 15).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = v.lanewise(SHL, 7).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 1]), a1);
                a2 = v.lanewise(SHR, 1).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 2]), a2);
                a3 = v.lanewise(SHR, 9).and(mask).reinterpretAsFloats().fma(FloatVector.broadcast(F, x[c + 3]), a3);
            }
            FloatVector sum = a0.add(a1).add(a2.add(a3));
            FloatVector off = FloatVector.fromArray(F, zeros, g * L).add(LaneCodec.INT8.offset());
            sum = off.mul(-sums[g]).add(sum);
            acc = sum.fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }
}
