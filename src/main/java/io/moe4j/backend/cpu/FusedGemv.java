package io.moe4j.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * Products with a few tokens, the decode case that is bound by memory bandwidth: each lane word is turned into its
 * slots' weight vectors by shifts, masks and {@link SlotDecode} (value·2^-bias, normal floats or zero, see
 * {@link LaneCodec}) and multiplied straight into the input, which {@link FusedInputs} scaled by 2^K to match; a segment's block scale
 * meets its partial sum once. Nothing is stored but the L results of each panel (L = {@link PanelMatrix#LANES}, 8 or 16).
 *
 * <p>The slot extractions are written out with their constants, inline in one loop: shifts by immediates are cheap
 * where shifts by a variable are not, and no vector crosses a method boundary, where the JIT might box it. The word
 * loops run on a {@code long} byte offset: with an {@code int} word index scaled to {@code long} inside the loop the
 * JIT keeps a bounds check per load and the FP4 loop runs about 1.5× slower (measured single-threaded on a
 * 2880 × 2880 panel set held in cache). FP4, INT4, INT8, F16, BF16, and FP6 and FP8 without byte permutes take
 * tokens in pairs: a word is decoded once for both.
 */
final class FusedGemv {
    private static final VectorSpecies<Float> F = VectorShapes.F;
    private static final VectorSpecies<Integer> I = VectorShapes.I;
    private static final VectorSpecies<Byte> B64 = VectorShapes.B;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int L = PanelMatrix.LANES;
    private static final VectorOperators.Binary SHL = VectorOperators.LSHL;
    private static final VectorOperators.Binary SHR = VectorOperators.LSHR;

    private FusedGemv() {
    }

    /**
     * y[yOff + t·yStride + r] for rows [rowFrom, rowTo) and the tokens of in; each panel's words are decoded once
     * per token, or per pair of tokens where the codec has a pair kernel ({@code pairs} below), while they are in
     * cache.
     */
    static void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, FusedInputs in, float[] y, int yOff,
                         int yStride, Scratch s) {
        MemorySegment words = m.words();
        int[] seg = m.plan(expert).segmentWords();
        float[] out = s.panel;
        LaneCodec codec = m.codec();
        // FP8 and FP6 pairs were measured only with the minifloat decode (AVX2, Zen 3: no heap vectors, which the FP6
        // kernel left at 2-3 tokens one at a time); the byte-permute decodes (AVX-512 VBMI, 2-3 operations a slot)
        // keep tokens one at a time until measured there.
        boolean minifloatPairs = !BytePermutes.FAST && (codec == LaneCodec.FP8_E4M3 || codec == LaneCodec.FP8_E5M2
                || codec == LaneCodec.FP6_E3M2 || codec == LaneCodec.FP6_E2M3);
        boolean pairs = codec == LaneCodec.FP4 || codec == LaneCodec.INT4 || codec == LaneCodec.INT8
                || codec == LaneCodec.F16 || codec == LaneCodec.BF16 || minifloatPairs;
        // FP4's E8M0 scales are read in its loop as exponent fields; other scales are decoded per panel.
        MemorySegment e8m0 = codec == LaneCodec.FP4 && m.plainE8m0() ? m.scales() : null;
        for (int p = rowFrom / L; p * L < rowTo; p++) {
            if (e8m0 == null) {
                VectorScales.scales(m, expert, p, s.scales);
            }
            if (codec.offset() != 0) {
                VectorScales.zeros(m, expert, p, s.zeros);
            }
            long base = m.wordOffset(expert, p, 0);
            long scaleAt = m.scaleIndex(expert, p, 0);
            int t = 0;
            for (; pairs && t + 2 <= in.n; t += 2) {
                if (codec == LaneCodec.FP4 && SlotDecode.WIDE_FP4_LOOKUP) {
                    fp4Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], e8m0, scaleAt, s.scales, out);
                } else if (codec == LaneCodec.FP4) {
                    fp4PairLooped(words, base, seg, in.scaled[t], in.scaled[t + 1], e8m0, scaleAt, s.scales, out);
                } else if (codec == LaneCodec.INT8) {
                    int8Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], in.segmentSums[t],
                            in.segmentSums[t + 1], s.scales, s.zeros, out);
                } else if (codec == LaneCodec.F16) {
                    f16Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], s.scales, out);
                } else if (codec == LaneCodec.BF16) {
                    bf16Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], s.scales, out);
                } else if (codec == LaneCodec.FP6_E3M2) {
                    fp6E3m2Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], s.scales, out);
                } else if (codec == LaneCodec.FP6_E2M3) {
                    fp6E2m3Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], s.scales, out);
                } else if (codec == LaneCodec.FP8_E4M3) {
                    fp8E4m3Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], s.scales, out);
                } else if (codec == LaneCodec.FP8_E5M2) {
                    fp8E5m2Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], s.scales, out);
                } else {
                    int4Pair(words, base, seg, in.scaled[t], in.scaled[t + 1], in.segmentSums[t],
                            in.segmentSums[t + 1], s.scales, s.zeros, out);
                }
                store(m, expert, p, rowTo, out, 0, in.post[t], y, yOff + t * yStride);
                store(m, expert, p, rowTo, out, L, in.post[t + 1], y, yOff + (t + 1) * yStride);
            }
            for (; t < in.n; t++) {
                float[] x = in.scaled[t];
                switch (codec) {
                    case FP4 -> {
                        if (SlotDecode.WIDE_FP4_LOOKUP) {
                            fp4(words, base, seg, x, e8m0, scaleAt, s.scales, out);
                        } else {
                            fp4Looped(words, base, seg, x, e8m0, scaleAt, s.scales, out);
                        }
                    }
                    case FP6_E3M2 -> fp6E3m2(words, base, seg, x, s.scales, out);
                    case FP6_E2M3 -> fp6E2m3(words, base, seg, x, s.scales, out);
                    case FP8_E4M3 -> fp8E4m3(words, base, seg, x, s.scales, out);
                    case FP8_E5M2 -> fp8E5m2(words, base, seg, x, s.scales, out);
                    case F16 -> f16(words, base, seg, x, s.scales, out);
                    case BF16 -> bf16(words, base, seg, x, s.scales, out);
                    case F32 -> f32(words, base, seg, x, s.scales, out);
                    case INT4 -> int4(words, base, seg, x, in.segmentSums[t], s.scales, s.zeros, out);
                    case INT8 -> int8(words, base, seg, x, in.segmentSums[t], s.scales, s.zeros, out);
                }
                store(m, expert, p, rowTo, out, 0, in.post[t], y, yOff + t * yStride);
            }
        }
    }

    /** The panel's L sums out[from, from + L), times shard scale and post, into y[at + row] for rows below rowTo. */
    private static void store(PanelMatrix m, int expert, int p, int rowTo, float[] out, int from, float post,
                              float[] y, int at) {
        int r = p * L;
        for (int lane = 0; lane < L && r + lane < rowTo; lane++) {
            float shard = m.shard() == null ? 1f : m.shard()[(expert * m.panels() + p) * L + lane];
            y[at + r + lane] = out[from + lane] * shard * post;
        }
    }

    /** out[0, L) = Σ_g scale_g · Σ_{c in g} w_c · x_c for one panel of FP4 lane words (code j in nibble j). */
    private static void fp4(MemorySegment words, long base, int[] seg, float[] x, MemorySegment e8m0, long scaleAt,
                            float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            int c = seg[g] * 8;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 8) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                // Nibble j shifted to the bottom: the lookup reads only its low bits.
                a0 = SlotDecode.fp4(v, 0).fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = SlotDecode.fp4(v, 1).fma(FloatVector.broadcast(F, x[c + 1]), a1);
                a2 = SlotDecode.fp4(v, 2).fma(FloatVector.broadcast(F, x[c + 2]), a2);
                a3 = SlotDecode.fp4(v, 3).fma(FloatVector.broadcast(F, x[c + 3]), a3);
                a0 = SlotDecode.fp4(v, 4).fma(FloatVector.broadcast(F, x[c + 4]), a0);
                a1 = SlotDecode.fp4(v, 5).fma(FloatVector.broadcast(F, x[c + 5]), a1);
                a2 = SlotDecode.fp4(v, 6).fma(FloatVector.broadcast(F, x[c + 6]), a2);
                a3 = SlotDecode.fp4(v, 7).fma(FloatVector.broadcast(F, x[c + 7]), a3);
            }
            acc = a0.add(a1).add(a2.add(a3)).fma(fp4Scale(e8m0, scaleAt, g, scales), acc);
        }
        acc.intoArray(out, 0);
    }

    /**
     * {@link #fp4} and {@link #fp4Pair} with the slots in short loops (four and two a pass), for the narrow (AVX2)
     * lookup: its longer decode made C2 (JDK 25) stop inlining the written-out slots from the fifth on
     * (NodeCountInliningCutoff) and keep their vectors on the heap, 1.0-1.1 against 8.7-16 G multiply-adds/s under
     * {@code -XX:UseAVX=2}. The wide lookup keeps the written-out form, faster there (docs/cpu.md, "Vector width").
     * Same sums in the same order.
     */
    private static void fp4Looped(MemorySegment words, long base, int[] seg, float[] x, MemorySegment e8m0, long scaleAt,
                            float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            int c = seg[g] * 8;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 8) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 8; j += 4) {
                    a0 = SlotDecode.fp4(v, j).fma(FloatVector.broadcast(F, x[c + j]), a0);
                    a1 = SlotDecode.fp4(v, j + 1).fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                    a2 = SlotDecode.fp4(v, j + 2).fma(FloatVector.broadcast(F, x[c + j + 2]), a2);
                    a3 = SlotDecode.fp4(v, j + 3).fma(FloatVector.broadcast(F, x[c + j + 3]), a3);
                }
            }
            acc = a0.add(a1).add(a2.add(a3)).fma(fp4Scale(e8m0, scaleAt, g, scales), acc);
        }
        acc.intoArray(out, 0);
    }

    private static void fp4PairLooped(MemorySegment words, long base, int[] seg, float[] x, float[] z, MemorySegment e8m0,
                                long scaleAt, float[] scales, float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 8;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 8) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 8; j += 2) {
                    FloatVector w = SlotDecode.fp4(v, j);
                    a0 = w.fma(FloatVector.broadcast(F, x[c + j]), a0);
                    b0 = w.fma(FloatVector.broadcast(F, z[c + j]), b0);
                    w = SlotDecode.fp4(v, j + 1);
                    a1 = w.fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                    b1 = w.fma(FloatVector.broadcast(F, z[c + j + 1]), b1);
                }
            }
            FloatVector sc = fp4Scale(e8m0, scaleAt, g, scales);
            accX = a0.add(a1).fma(sc, accX);
            accZ = b0.add(b1).fma(sc, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /**
     * Segment g's block scales: E8M0 bytes (none 0 or 255) read as the exponent fields of their floats, 2^(b - 127),
     * normal for every byte 1..254; else the decoded scales.
     */
    static FloatVector fp4Scale(MemorySegment e8m0, long scaleAt, int g, float[] scales) {
        return e8m0 == null ? FloatVector.fromArray(F, scales, g * L)
                : ((IntVector) ByteVector.fromMemorySegment(B64, e8m0, scaleAt + (long) g * L, LE)
                .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0)).lanewise(SHL, 23).reinterpretAsFloats();
    }

    /** {@link #fp4} for two tokens, each word decoded once: out[0, L) for x and out[L, 2L) for z. */
    private static void fp4Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, MemorySegment e8m0,
                                long scaleAt, float[] scales, float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 8;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 8) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                FloatVector w = SlotDecode.fp4(v, 0);
                a0 = w.fma(FloatVector.broadcast(F, x[c]), a0);
                b0 = w.fma(FloatVector.broadcast(F, z[c]), b0);
                w = SlotDecode.fp4(v, 1);
                a1 = w.fma(FloatVector.broadcast(F, x[c + 1]), a1);
                b1 = w.fma(FloatVector.broadcast(F, z[c + 1]), b1);
                w = SlotDecode.fp4(v, 2);
                a0 = w.fma(FloatVector.broadcast(F, x[c + 2]), a0);
                b0 = w.fma(FloatVector.broadcast(F, z[c + 2]), b0);
                w = SlotDecode.fp4(v, 3);
                a1 = w.fma(FloatVector.broadcast(F, x[c + 3]), a1);
                b1 = w.fma(FloatVector.broadcast(F, z[c + 3]), b1);
                w = SlotDecode.fp4(v, 4);
                a0 = w.fma(FloatVector.broadcast(F, x[c + 4]), a0);
                b0 = w.fma(FloatVector.broadcast(F, z[c + 4]), b0);
                w = SlotDecode.fp4(v, 5);
                a1 = w.fma(FloatVector.broadcast(F, x[c + 5]), a1);
                b1 = w.fma(FloatVector.broadcast(F, z[c + 5]), b1);
                w = SlotDecode.fp4(v, 6);
                a0 = w.fma(FloatVector.broadcast(F, x[c + 6]), a0);
                b0 = w.fma(FloatVector.broadcast(F, z[c + 6]), b0);
                w = SlotDecode.fp4(v, 7);
                a1 = w.fma(FloatVector.broadcast(F, x[c + 7]), a1);
                b1 = w.fma(FloatVector.broadcast(F, z[c + 7]), b1);
            }
            FloatVector sc = fp4Scale(e8m0, scaleAt, g, scales);
            accX = a0.add(a1).fma(sc, accX);
            accZ = b0.add(b1).fma(sc, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /**
     * out[0, L) = Σ_g scale_g · (Σ_{c in g} p_c · x_c − (8 + zero_g) · Σ_{c in g} x_c) for one panel of INT4 lane
     * words (offset-binary nibbles p = code + 8, nibble j of a word in bits 4j..4j+3).
     */
    private static void int4(MemorySegment words, long base, int[] seg, float[] x, float[] sums, float[] scales,
                             float[] zeros, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            int c = seg[g] * 8;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 8) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                // Nibble j converted to the float p (exact; normal or zero).
                a0 = SlotDecode.int4(v, 0).fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = SlotDecode.int4(v, 1).fma(FloatVector.broadcast(F, x[c + 1]), a1);
                a2 = SlotDecode.int4(v, 2).fma(FloatVector.broadcast(F, x[c + 2]), a2);
                a3 = SlotDecode.int4(v, 3).fma(FloatVector.broadcast(F, x[c + 3]), a3);
                a0 = SlotDecode.int4(v, 4).fma(FloatVector.broadcast(F, x[c + 4]), a0);
                a1 = SlotDecode.int4(v, 5).fma(FloatVector.broadcast(F, x[c + 5]), a1);
                a2 = SlotDecode.int4(v, 6).fma(FloatVector.broadcast(F, x[c + 6]), a2);
                a3 = SlotDecode.int4(v, 7).fma(FloatVector.broadcast(F, x[c + 7]), a3);
            }
            FloatVector sum = a0.add(a1).add(a2.add(a3));
            FloatVector off = FloatVector.fromArray(F, zeros, g * L).add(LaneCodec.INT4.offset());
            sum = off.mul(-sums[g]).add(sum);
            acc = sum.fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** {@link #int4} for two tokens, each word decoded once: out[0, L) for x and out[L, 2L) for z. */
    private static void int4Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, float[] sumsX,
                                 float[] sumsZ, float[] scales, float[] zeros, float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 8;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 8) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                // A loop over the nibbles, not eight written-out lines: written out, C2 (JDK 25) kept a slot's
                // shift and conversion as heap vectors on every word (as in VectorPanelDecoder.int4).
                for (int j = 0; j < 8; j += 2) {
                    FloatVector w = SlotDecode.integers(v.lanewise(SHR, 4 * j).and(0xF));
                    a0 = w.fma(FloatVector.broadcast(F, x[c + j]), a0);
                    b0 = w.fma(FloatVector.broadcast(F, z[c + j]), b0);
                    w = SlotDecode.integers(v.lanewise(SHR, 4 * j + 4).and(0xF));
                    a1 = w.fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                    b1 = w.fma(FloatVector.broadcast(F, z[c + j + 1]), b1);
                }
            }
            FloatVector off = FloatVector.fromArray(F, zeros, g * L).add(LaneCodec.INT4.offset());
            FloatVector sc = FloatVector.fromArray(F, scales, g * L);
            accX = off.mul(-sumsX[g]).add(a0.add(a1)).fma(sc, accX);
            accZ = off.mul(-sumsZ[g]).add(b0.add(b1)).fma(sc, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /** {@link #int8} for tokens x and z (out[0, L) and out[L, 2L)): each slot decoded once for both. */
    private static void int8Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, float[] sumsX,
                                 float[] sumsZ, float[] scales, float[] zeros, float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 4;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 4) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see int4Pair
                    FloatVector w0 = SlotDecode.int8(v, j);
                    a0 = w0.fma(FloatVector.broadcast(F, x[c + j]), a0);
                    b0 = w0.fma(FloatVector.broadcast(F, z[c + j]), b0);
                    FloatVector w1 = SlotDecode.int8(v, j + 1);
                    a1 = w1.fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                    b1 = w1.fma(FloatVector.broadcast(F, z[c + j + 1]), b1);
                }
            }
            FloatVector off = FloatVector.fromArray(F, zeros, g * L).add(LaneCodec.INT8.offset());
            FloatVector sc = FloatVector.fromArray(F, scales, g * L);
            accX = off.mul(-sumsX[g]).add(a0.add(a1)).fma(sc, accX);
            accZ = off.mul(-sumsZ[g]).add(b0.add(b1)).fma(sc, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /** FP6 E3M2, 5 slots a word (LaneCodec, {@link SlotDecode#fp6E3m2}). */
    private static void fp6E3m2(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            int c = seg[g] * 5;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 5) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see SlotDecode
                    a0 = SlotDecode.fp6E3m2(v, j).fma(FloatVector.broadcast(F, x[c + j]), a0);
                    a1 = SlotDecode.fp6E3m2(v, j + 1).fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                }
                a0 = SlotDecode.fp6E3m2(v, 4).fma(FloatVector.broadcast(F, x[c + 4]), a0);
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** {@link #fp6E3m2} for tokens x and z (out[0, L) and out[L, 2L)): each slot decoded once for both. */
    private static void fp6E3m2Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, float[] scales,
                                   float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 5;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 5) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see SlotDecode
                    FloatVector w0 = SlotDecode.fp6E3m2(v, j);
                    a0 = w0.fma(FloatVector.broadcast(F, x[c + j]), a0);
                    b0 = w0.fma(FloatVector.broadcast(F, z[c + j]), b0);
                    FloatVector w1 = SlotDecode.fp6E3m2(v, j + 1);
                    a1 = w1.fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                    b1 = w1.fma(FloatVector.broadcast(F, z[c + j + 1]), b1);
                }
                FloatVector w4 = SlotDecode.fp6E3m2(v, 4);
                a0 = w4.fma(FloatVector.broadcast(F, x[c + 4]), a0);
                b0 = w4.fma(FloatVector.broadcast(F, z[c + 4]), b0);
            }
            FloatVector s = FloatVector.fromArray(F, scales, g * L);
            accX = a0.add(a1).fma(s, accX);
            accZ = b0.add(b1).fma(s, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /** {@link #fp6E2m3} for tokens x and z (out[0, L) and out[L, 2L)): each slot decoded once for both. */
    private static void fp6E2m3Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, float[] scales,
                                   float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 5;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 5) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see SlotDecode
                    FloatVector w0 = SlotDecode.fp6E2m3(v, j);
                    a0 = w0.fma(FloatVector.broadcast(F, x[c + j]), a0);
                    b0 = w0.fma(FloatVector.broadcast(F, z[c + j]), b0);
                    FloatVector w1 = SlotDecode.fp6E2m3(v, j + 1);
                    a1 = w1.fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                    b1 = w1.fma(FloatVector.broadcast(F, z[c + j + 1]), b1);
                }
                FloatVector w4 = SlotDecode.fp6E2m3(v, 4);
                a0 = w4.fma(FloatVector.broadcast(F, x[c + 4]), a0);
                b0 = w4.fma(FloatVector.broadcast(F, z[c + 4]), b0);
            }
            FloatVector s = FloatVector.fromArray(F, scales, g * L);
            accX = a0.add(a1).fma(s, accX);
            accZ = b0.add(b1).fma(s, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /** FP6 E2M3, 5 slots a word (LaneCodec, {@link SlotDecode#fp6E2m3}). */
    private static void fp6E2m3(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            int c = seg[g] * 5;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 5) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see SlotDecode
                    a0 = SlotDecode.fp6E2m3(v, j).fma(FloatVector.broadcast(F, x[c + j]), a0);
                    a1 = SlotDecode.fp6E2m3(v, j + 1).fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                }
                a0 = SlotDecode.fp6E2m3(v, 4).fma(FloatVector.broadcast(F, x[c + 4]), a0);
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** FP8 E4M3, 4 slots a word (LaneCodec, {@link SlotDecode#fp8E4m3}). */
    private static void fp8E4m3(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            int c = seg[g] * 4;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 4) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see SlotDecode
                    a0 = SlotDecode.fp8E4m3(v, j).fma(FloatVector.broadcast(F, x[c + j]), a0);
                    a1 = SlotDecode.fp8E4m3(v, j + 1).fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                }
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /**
     * {@link #fp8E4m3} for tokens x and z (out[0, L) and out[L, 2L)): each slot decoded once for both. One pair
     * kernel a format, like the single-token ones: one kernel for E4M3 and E5M2 with a flag choosing the decode (and
     * the same for the two FP6 formats) left the second format's vectors on the heap (45-108 KB a panel) and ran it
     * at 0.34-0.39x (FusedDecodeBench, Zen 3).
     */
    private static void fp8E4m3Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, float[] scales,
                                    float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 4;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 4) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see SlotDecode
                    FloatVector w0 = SlotDecode.fp8E4m3(v, j);
                    a0 = w0.fma(FloatVector.broadcast(F, x[c + j]), a0);
                    b0 = w0.fma(FloatVector.broadcast(F, z[c + j]), b0);
                    FloatVector w1 = SlotDecode.fp8E4m3(v, j + 1);
                    a1 = w1.fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                    b1 = w1.fma(FloatVector.broadcast(F, z[c + j + 1]), b1);
                }
            }
            FloatVector s = FloatVector.fromArray(F, scales, g * L);
            accX = a0.add(a1).fma(s, accX);
            accZ = b0.add(b1).fma(s, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /** {@link #fp8E5m2} for tokens x and z (out[0, L) and out[L, 2L)): each slot decoded once for both. */
    private static void fp8E5m2Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, float[] scales,
                                    float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 4;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 4) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see SlotDecode
                    FloatVector w0 = SlotDecode.fp8E5m2(v, j);
                    a0 = w0.fma(FloatVector.broadcast(F, x[c + j]), a0);
                    b0 = w0.fma(FloatVector.broadcast(F, z[c + j]), b0);
                    FloatVector w1 = SlotDecode.fp8E5m2(v, j + 1);
                    a1 = w1.fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                    b1 = w1.fma(FloatVector.broadcast(F, z[c + j + 1]), b1);
                }
            }
            FloatVector s = FloatVector.fromArray(F, scales, g * L);
            accX = a0.add(a1).fma(s, accX);
            accZ = b0.add(b1).fma(s, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /** FP8 E5M2, 4 slots a word (LaneCodec, {@link SlotDecode#fp8E5m2}). */
    private static void fp8E5m2(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            int c = seg[g] * 4;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 4) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                for (int j = 0; j < 4; j += 2) { // a loop, not written out: see SlotDecode
                    a0 = SlotDecode.fp8E5m2(v, j).fma(FloatVector.broadcast(F, x[c + j]), a0);
                    a1 = SlotDecode.fp8E5m2(v, j + 1).fma(FloatVector.broadcast(F, x[c + j + 1]), a1);
                }
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** IEEE half, 2 slots a word: magnitude j at 15j to float bits 13..27, sign 30 + j; {@link SlotDecode#minifloat}. */
    private static void f16(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            int c = seg[g] * 2;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 2) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                a0 = SlotDecode.f16(v, 0).fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = SlotDecode.f16(v, 1).fma(FloatVector.broadcast(F, x[c + 1]), a1);
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** {@link #f16} for tokens x and z (out[0, L) and out[L, 2L)): each slot decoded once for both. */
    private static void f16Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, float[] scales,
                                float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            int c = seg[g] * 2;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 2) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                FloatVector w0 = SlotDecode.f16(v, 0);
                a0 = w0.fma(FloatVector.broadcast(F, x[c]), a0);
                b0 = w0.fma(FloatVector.broadcast(F, z[c]), b0);
                FloatVector w1 = SlotDecode.f16(v, 1);
                a1 = w1.fma(FloatVector.broadcast(F, x[c + 1]), a1);
                b1 = w1.fma(FloatVector.broadcast(F, z[c + 1]), b1);
            }
            FloatVector s = FloatVector.fromArray(F, scales, g * L);
            accX = a0.add(a1).fma(s, accX);
            accZ = b0.add(b1).fma(s, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    /**
     * bfloat16, 2 slots a word (the halves are the top halves of floats): two words a pass into four sums. A slot
     * decodes in one or two operations, so the sums' FMA chains set the pace: with two sums a word (one FMA each) a
     * pass waited the FMA latency for 32 bytes of weights, 10.9 G multiply-adds/s in cache on a Zen 3 core; four sums
     * over two words gave 16.4, and a 4-layer gpt-oss-20b decode step (lm_head and attention) 1.4-1.9x as fast there
     * (docs/cpu.md).
     */
    private static void bf16(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            int w = seg[g];
            for (; w + 1 < seg[g + 1]; w += 2) {
                long o = base + VectorShapes.WORD_BYTES * w;
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                IntVector u = IntVector.fromMemorySegment(I, words, o + VectorShapes.WORD_BYTES, LE);
                a0 = SlotDecode.bf16(v, 0).fma(FloatVector.broadcast(F, x[2 * w]), a0);
                a1 = SlotDecode.bf16(v, 1).fma(FloatVector.broadcast(F, x[2 * w + 1]), a1);
                a2 = SlotDecode.bf16(u, 0).fma(FloatVector.broadcast(F, x[2 * w + 2]), a2);
                a3 = SlotDecode.bf16(u, 1).fma(FloatVector.broadcast(F, x[2 * w + 3]), a3);
            }
            if (w < seg[g + 1]) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                a0 = SlotDecode.bf16(v, 0).fma(FloatVector.broadcast(F, x[2 * w]), a0);
                a1 = SlotDecode.bf16(v, 1).fma(FloatVector.broadcast(F, x[2 * w + 1]), a1);
            }
            acc = a0.add(a1).add(a2.add(a3)).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /**
     * {@link #bf16} for two tokens x and z at once: each pair of words decoded once, four sums a token in the same
     * order as {@link #bf16}'s, so each token's result has the same bits as alone (CpuMatricesTest). FusedDecodeBench
     * 2 bf16 (one thread, in cache, Zen 3, two rounds against the tokens one at a time): 20.3-20.9 against 13.0-15.6 G
     * multiply-adds/s.
     */
    private static void bf16Pair(MemorySegment words, long base, int[] seg, float[] x, float[] z, float[] scales,
                                 float[] out) {
        FloatVector accX = FloatVector.zero(F);
        FloatVector accZ = accX;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            FloatVector b0 = a0;
            FloatVector b1 = a0;
            FloatVector b2 = a0;
            FloatVector b3 = a0;
            int w = seg[g];
            for (; w + 1 < seg[g + 1]; w += 2) {
                long o = base + VectorShapes.WORD_BYTES * w;
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                IntVector u = IntVector.fromMemorySegment(I, words, o + VectorShapes.WORD_BYTES, LE);
                FloatVector w0 = SlotDecode.bf16(v, 0);
                FloatVector w1 = SlotDecode.bf16(v, 1);
                FloatVector w2 = SlotDecode.bf16(u, 0);
                FloatVector w3 = SlotDecode.bf16(u, 1);
                a0 = w0.fma(FloatVector.broadcast(F, x[2 * w]), a0);
                b0 = w0.fma(FloatVector.broadcast(F, z[2 * w]), b0);
                a1 = w1.fma(FloatVector.broadcast(F, x[2 * w + 1]), a1);
                b1 = w1.fma(FloatVector.broadcast(F, z[2 * w + 1]), b1);
                a2 = w2.fma(FloatVector.broadcast(F, x[2 * w + 2]), a2);
                b2 = w2.fma(FloatVector.broadcast(F, z[2 * w + 2]), b2);
                a3 = w3.fma(FloatVector.broadcast(F, x[2 * w + 3]), a3);
                b3 = w3.fma(FloatVector.broadcast(F, z[2 * w + 3]), b3);
            }
            if (w < seg[g + 1]) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                FloatVector w0 = SlotDecode.bf16(v, 0);
                FloatVector w1 = SlotDecode.bf16(v, 1);
                a0 = w0.fma(FloatVector.broadcast(F, x[2 * w]), a0);
                b0 = w0.fma(FloatVector.broadcast(F, z[2 * w]), b0);
                a1 = w1.fma(FloatVector.broadcast(F, x[2 * w + 1]), a1);
                b1 = w1.fma(FloatVector.broadcast(F, z[2 * w + 1]), b1);
            }
            FloatVector s = FloatVector.fromArray(F, scales, g * L);
            accX = a0.add(a1).add(a2.add(a3)).fma(s, accX);
            accZ = b0.add(b1).add(b2.add(b3)).fma(s, accZ);
        }
        accX.intoArray(out, 0);
        accZ.intoArray(out, L);
    }

    private static void f32(MemorySegment words, long base, int[] seg, float[] x, float[] scales, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            int w = seg[g];
            for (; w + 1 < seg[g + 1]; w += 2) {
                a0 = FloatVector.fromMemorySegment(F, words, base + VectorShapes.WORD_BYTES * w, LE).fma(FloatVector.broadcast(F, x[w]), a0);
                a1 = FloatVector.fromMemorySegment(F, words, base + VectorShapes.WORD_BYTES * (w + 1), LE)
                        .fma(FloatVector.broadcast(F, x[w + 1]), a1);
            }
            if (w < seg[g + 1]) {
                a0 = FloatVector.fromMemorySegment(F, words, base + VectorShapes.WORD_BYTES * w, LE).fma(FloatVector.broadcast(F, x[w]), a0);
            }
            acc = a0.add(a1).fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }

    /** INT8: offset-binary byte j (p = code + 128) converted to the float p; offset and zero as for INT4. */
    private static void int8(MemorySegment words, long base, int[] seg, float[] x, float[] sums, float[] scales,
                             float[] zeros, float[] out) {
        FloatVector acc = FloatVector.zero(F);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = a0;
            FloatVector a2 = a0;
            FloatVector a3 = a0;
            int c = seg[g] * 4;
            for (long o = base + VectorShapes.WORD_BYTES * seg[g], end = base + VectorShapes.WORD_BYTES * seg[g + 1]; o < end; o += VectorShapes.WORD_BYTES, c += 4) {
                IntVector v = IntVector.fromMemorySegment(I, words, o, LE);
                a0 = SlotDecode.int8(v, 0).fma(FloatVector.broadcast(F, x[c]), a0);
                a1 = SlotDecode.int8(v, 1).fma(FloatVector.broadcast(F, x[c + 1]), a1);
                a2 = SlotDecode.int8(v, 2).fma(FloatVector.broadcast(F, x[c + 2]), a2);
                a3 = SlotDecode.int8(v, 3).fma(FloatVector.broadcast(F, x[c + 3]), a3);
            }
            FloatVector sum = a0.add(a1).add(a2.add(a3));
            FloatVector off = FloatVector.fromArray(F, zeros, g * L).add(LaneCodec.INT8.offset());
            sum = off.mul(-sums[g]).add(sum);
            acc = sum.fma(FloatVector.fromArray(F, scales, g * L), acc);
        }
        acc.intoArray(out, 0);
    }
}
