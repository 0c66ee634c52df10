package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * Decodes one panel ({@link PanelMatrix#LANES} rows) of a {@link PanelMatrix} into exact weight values, out[c·L + lane] for packed column
 * c, in the worker's scratch: the tile that {@link VectorPanelDot} then streams from cache once per token. Only a
 * panel is ever dequantized, never a matrix.
 *
 * <p>Each codec has its own loop with the slot extractions of {@link LaneCodec} written out (shifts by immediates;
 * no vectors passed between methods but {@link SlotDecode}'s, which the JIT inlines). A float slot decodes to
 * value·2^-bias, a normal float or zero, and is multiplied by scale·2^bias, which is exact (a power of two) unless it
 * overflows; then by 2^bias and the scale one after the other.
 */
final class VectorPanelDecoder {
    private static final VectorSpecies<Float> F = VectorShapes.F;
    private static final VectorSpecies<Integer> I = VectorShapes.I;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int L = PanelMatrix.LANES;
    private static final VectorOperators.Binary SHL = VectorOperators.LSHL;
    private static final VectorOperators.Binary SHR = VectorOperators.LSHR;

    private VectorPanelDecoder() {
    }

    /** Decodes panel p of expert e into out, using s for its scales. */
    static void decode(PanelMatrix m, int expert, int panel, Scratch s, float[] out) {
        ColumnPlan plan = m.plan(expert);
        LaneCodec codec = m.codec();
        VectorScales.scales(m, expert, panel, s.scales);
        long base = m.wordOffset(expert, panel, 0);
        int[] seg = plan.segmentWords();
        if (codec.offset() != 0) {
            VectorScales.zeros(m, expert, panel, s.zeros);
            if (codec == LaneCodec.INT4) {
                int4(m.words(), base, seg, s.scales, s.zeros, out);
            } else {
                int8(m.words(), base, seg, s.scales, s.zeros, out);
            }
            return;
        }
        float unbias = Math.scalb(1f, codec.bias());
        switch (codec) {
            case FP4 -> fp4(m.words(), base, seg, s.scales, unbias, out);
            case FP6_E3M2 -> fp6E3m2(m.words(), base, seg, s.scales, unbias, out);
            case FP6_E2M3 -> fp6E2m3(m.words(), base, seg, s.scales, unbias, out);
            case FP8_E4M3 -> fp8E4m3(m.words(), base, seg, s.scales, unbias, out);
            case FP8_E5M2 -> fp8E5m2(m.words(), base, seg, s.scales, unbias, out);
            case F16 -> f16(m.words(), base, seg, s.scales, unbias, out);
            case BF16 -> bf16(m.words(), base, seg, s.scales, out);
            case F32 -> f32(m.words(), base, seg, s.scales, out);
            default -> throw new IllegalStateException(codec.toString());
        }
    }

    /**
     * The multiplier that takes a float slot to value·scale: scale·2^bias when finite (one rounding, as the
     * reference's code·scale), else scale alone after the caller multiplies by 2^bias (returned flag false).
     */
    private static boolean single(FloatVector scale, float unbias) {
        // |v| < ∞ rather than test(IS_FINITE): the JIT compiles the comparison to one instruction, while the test
        // ran as a Java loop that took n = 8 gpt-oss decode calls from 30 to 500 ms.
        return scale.mul(unbias).abs().compare(VectorOperators.LT, Float.POSITIVE_INFINITY).allTrue();
    }

    /** FP4, code j in nibble j: {@link SlotDecode#fp4} (value·2^-120), then the scale. */
    private static void fp4(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 8 * L;
                // A loop over the nibbles, as for INT4 below: no written-out lines for the JIT to box.
                for (int j = 0; j < 8; j++) {
                    SlotDecode.fp4(v, j).mul(mul).mul(then).intoArray(out, o + j * L);
                }
            }
        }
    }

    /** FP6 E3M2, 5 slots a word ({@link SlotDecode#fp6E3m2}); one method per format so that no branch merges vectors. */
    private static void fp6E3m2(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 5 * L;
                for (int j = 0; j < 5; j++) { // a loop, not written out: see SlotDecode
                    SlotDecode.fp6E3m2(v, j).mul(mul).mul(then).intoArray(out, o + j * L);
                }
            }
        }
    }

    /** FP6 E2M3, 5 slots a word ({@link SlotDecode#fp6E2m3}); one method per format so that no branch merges vectors. */
    private static void fp6E2m3(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 5 * L;
                for (int j = 0; j < 5; j++) { // a loop, not written out: see SlotDecode
                    SlotDecode.fp6E2m3(v, j).mul(mul).mul(then).intoArray(out, o + j * L);
                }
            }
        }
    }

    /** FP8 E4M3, 4 slots a word ({@link SlotDecode#fp8E4m3}); one method per format so that no branch merges vectors. */
    private static void fp8E4m3(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 4 * L;
                for (int j = 0; j < 4; j++) { // a loop, not written out: see SlotDecode
                    SlotDecode.fp8E4m3(v, j).mul(mul).mul(then).intoArray(out, o + j * L);
                }
            }
        }
    }

    /** FP8 E5M2, 4 slots a word ({@link SlotDecode#fp8E5m2}); one method per format so that no branch merges vectors. */
    private static void fp8E5m2(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 4 * L;
                for (int j = 0; j < 4; j++) { // a loop, not written out: see SlotDecode
                    SlotDecode.fp8E5m2(v, j).mul(mul).mul(then).intoArray(out, o + j * L);
                }
            }
        }
    }

    /** IEEE half, 2 slots a word: magnitude j (15 bits) at 15j to float bits 13..27, sign j at 30 + j. */
    private static void f16(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 2 * L;
                SlotDecode.f16(v, 0).mul(mul).mul(then).intoArray(out, o);
                SlotDecode.f16(v, 1).mul(mul).mul(then).intoArray(out, o + L);
            }
        }
    }

    /** bfloat16, 2 slots a word: the low and high halves are the top halves of floats. */
    private static void bf16(MemorySegment words, long base, int[] seg, float[] scales, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 2 * L;
                SlotDecode.bf16(v, 0).mul(scale).intoArray(out, o);
                SlotDecode.bf16(v, 1).mul(scale).intoArray(out, o + L);
            }
        }
    }

    private static void f32(MemorySegment words, long base, int[] seg, float[] scales, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                FloatVector.fromMemorySegment(F, words, base + VectorShapes.WORD_BYTES * w, LE).mul(scale).intoArray(out, w * L);
            }
        }
    }

    /**
     * INT4: nibble j of a word is p = code + 8; (p − 8 − zero) · scale. The eight nibbles go through a loop, not eight
     * written-out lines like the other codecs: written out, C2 (JDK 25) boxed the last line's shift and conversion
     * into heap vectors on every word (128 bytes a word, ~1.6 GB a gpt-oss w4a16 prefill call at T = 512, 4.6x
     * slower per panel in PanelDecodeBench); the loop form allocates nothing (cpu NOTES).
     */
    private static void int4(MemorySegment words, long base, int[] seg, float[] scales, float[] zeros, float[] out) {
        IntVector nib = IntVector.broadcast(I, 0xF);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            FloatVector off = FloatVector.fromArray(F, zeros, g * L).add(LaneCodec.INT4.offset());
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 8 * L;
                for (int j = 0; j < 8; j++) {
                    ints(v.lanewise(SHR, 4 * j).and(nib)).sub(off).mul(scale).intoArray(out, o + j * L);
                }
            }
        }
    }

    /** INT8: byte j of a word is p = code + 128; (p − 128 − zero) · scale. */
    private static void int8(MemorySegment words, long base, int[] seg, float[] scales, float[] zeros, float[] out) {
        IntVector b = IntVector.broadcast(I, 0xFF);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            FloatVector off = FloatVector.fromArray(F, zeros, g * L).add(LaneCodec.INT8.offset());
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + VectorShapes.WORD_BYTES * w, LE);
                int o = w * 4 * L;
                ints(v.and(b)).sub(off).mul(scale).intoArray(out, o);
                ints(v.lanewise(SHR, 8).and(b)).sub(off).mul(scale).intoArray(out, o + L);
                ints(v.lanewise(SHR, 16).and(b)).sub(off).mul(scale).intoArray(out, o + 2 * L);
                ints(v.lanewise(SHR, 24)).sub(off).mul(scale).intoArray(out, o + 3 * L);
            }
        }
    }

    /** Small integers to float, exactly ({@link SlotDecode#integers}). */
    private static FloatVector ints(IntVector p) {
        return SlotDecode.integers(p);
    }
}
