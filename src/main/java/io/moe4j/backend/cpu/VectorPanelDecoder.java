package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * Decodes one panel (8 rows) of a {@link PanelMatrix} into exact weight values, out[c·8 + lane] for packed column
 * c, in the worker's scratch: the tile that {@link VectorPanelDot} then streams from cache once per token. Only a
 * panel is ever dequantized, never a matrix.
 *
 * <p>Each codec has its own loop with the slot extractions of {@link LaneCodec} written out (shifts by immediates;
 * no vectors passed between methods). A float slot reads as value·2^-bias and is multiplied by scale·2^bias, which
 * is exact (a power of two) unless it overflows; then by 2^bias and the scale one after the other.
 */
final class VectorPanelDecoder {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
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
            case FP6_E3M2 -> fp6(m.words(), base, seg, s.scales, unbias, out, 21, 0x03E00000);
            case FP6_E2M3 -> fp6(m.words(), base, seg, s.scales, unbias, out, 20, 0x01F00000);
            case FP8_E4M3 -> fp8(m.words(), base, seg, s.scales, unbias, out, 20, 0x07F00000);
            case FP8_E5M2 -> fp8(m.words(), base, seg, s.scales, unbias, out, 21, 0x0FE00000);
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

    private static void fp4(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out) {
        IntVector mask = IntVector.broadcast(I, 0x81C00000);
        IntVector low2 = IntVector.broadcast(I, 0x00C00000);
        IntVector top = IntVector.broadcast(I, 0x01000000);
        IntVector sign = IntVector.broadcast(I, 0x80000000);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int o = w * 8 * L;
                v.lanewise(SHL, 22).and(mask).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o);
                v.lanewise(SHL, 19).and(mask).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + L);
                v.lanewise(SHL, 16).and(mask).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + 2 * L);
                v.lanewise(SHL, 6).and(mask).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + 3 * L);
                v.lanewise(SHL, 3).and(mask).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + 4 * L);
                v.and(mask).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + 5 * L);
                v.lanewise(SHL, 12).and(low2).or(v.lanewise(SHL, 11).and(top)).or(v.lanewise(SHL, 17).and(sign))
                        .reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + 6 * L);
                v.lanewise(SHR, 4).and(low2).or(v.lanewise(SHR, 5).and(top)).or(v.lanewise(SHL, 1).and(sign))
                        .reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + 7 * L);
            }
        }
    }

    /**
     * FP6, 5 slots a word: magnitude j (5 bits) at 5j, sign j at 27 + j. magLow is the float bit its lowest
     * magnitude bit goes to (21 for E3M2, 20 for E2M3).
     */
    private static void fp6(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out,
                            int magLow, int magMask) {
        IntVector mag = IntVector.broadcast(I, magMask);
        IntVector sign = IntVector.broadcast(I, 0x80000000);
        boolean e3m2 = magLow == 21;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int o = w * 5 * L;
                IntVector s0 = e3m2 ? v.lanewise(SHL, 21) : v.lanewise(SHL, 20);
                IntVector s1 = e3m2 ? v.lanewise(SHL, 16) : v.lanewise(SHL, 15);
                IntVector s2 = e3m2 ? v.lanewise(SHL, 11) : v.lanewise(SHL, 10);
                IntVector s3 = e3m2 ? v.lanewise(SHL, 6) : v.lanewise(SHL, 5);
                IntVector s4 = e3m2 ? v.lanewise(SHL, 1) : v;
                s0.and(mag).or(v.lanewise(SHL, 4).and(sign)).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o);
                s1.and(mag).or(v.lanewise(SHL, 3).and(sign)).reinterpretAsFloats().mul(mul).mul(then)
                        .intoArray(out, o + L);
                s2.and(mag).or(v.lanewise(SHL, 2).and(sign)).reinterpretAsFloats().mul(mul).mul(then)
                        .intoArray(out, o + 2 * L);
                s3.and(mag).or(v.lanewise(SHL, 1).and(sign)).reinterpretAsFloats().mul(mul).mul(then)
                        .intoArray(out, o + 3 * L);
                s4.and(mag).or(v.and(sign)).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + 4 * L);
            }
        }
    }

    /** FP8, 4 slots a word: magnitude j (7 bits) at 7j, sign j at 28 + j; magLow 20 (E4M3) or 21 (E5M2). */
    private static void fp8(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out,
                            int magLow, int magMask) {
        IntVector mag = IntVector.broadcast(I, magMask);
        IntVector sign = IntVector.broadcast(I, 0x80000000);
        boolean e4m3 = magLow == 20;
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int o = w * 4 * L;
                IntVector s0 = e4m3 ? v.lanewise(SHL, 20) : v.lanewise(SHL, 21);
                IntVector s1 = e4m3 ? v.lanewise(SHL, 13) : v.lanewise(SHL, 14);
                IntVector s2 = e4m3 ? v.lanewise(SHL, 6) : v.lanewise(SHL, 7);
                IntVector s3 = e4m3 ? v.lanewise(SHR, 1) : v;
                s0.and(mag).or(v.lanewise(SHL, 3).and(sign)).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o);
                s1.and(mag).or(v.lanewise(SHL, 2).and(sign)).reinterpretAsFloats().mul(mul).mul(then)
                        .intoArray(out, o + L);
                s2.and(mag).or(v.lanewise(SHL, 1).and(sign)).reinterpretAsFloats().mul(mul).mul(then)
                        .intoArray(out, o + 2 * L);
                s3.and(mag).or(v.and(sign)).reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o + 3 * L);
            }
        }
    }

    /** IEEE half, 2 slots a word: magnitude j (15 bits) at 15j to float bits 13..27, sign j at 30 + j. */
    private static void f16(MemorySegment words, long base, int[] seg, float[] scales, float unbias, float[] out) {
        IntVector mag = IntVector.broadcast(I, 0x0FFFE000);
        IntVector sign = IntVector.broadcast(I, 0x80000000);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            boolean single = single(scale, unbias);
            FloatVector mul = single ? scale.mul(unbias) : FloatVector.broadcast(F, unbias);
            FloatVector then = single ? FloatVector.broadcast(F, 1f) : scale;
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int o = w * 2 * L;
                v.lanewise(SHL, 13).and(mag).or(v.lanewise(SHL, 1).and(sign)).reinterpretAsFloats().mul(mul).mul(then)
                        .intoArray(out, o);
                v.lanewise(SHR, 2).and(mag).or(v.and(sign)).reinterpretAsFloats().mul(mul).mul(then)
                        .intoArray(out, o + L);
            }
        }
    }

    /** bfloat16, 2 slots a word: the low and high halves are the top halves of floats. */
    private static void bf16(MemorySegment words, long base, int[] seg, float[] scales, float[] out) {
        IntVector high = IntVector.broadcast(I, 0xFFFF0000);
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int o = w * 2 * L;
                v.lanewise(SHL, 16).reinterpretAsFloats().mul(scale).intoArray(out, o);
                v.and(high).reinterpretAsFloats().mul(scale).intoArray(out, o + L);
            }
        }
    }

    private static void f32(MemorySegment words, long base, int[] seg, float[] scales, float[] out) {
        for (int g = 0; g < seg.length - 1; g++) {
            FloatVector scale = FloatVector.fromArray(F, scales, g * L);
            for (int w = seg[g]; w < seg[g + 1]; w++) {
                FloatVector.fromMemorySegment(F, words, base + 32L * w, LE).mul(scale).intoArray(out, w * L);
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
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
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
                IntVector v = IntVector.fromMemorySegment(I, words, base + 32L * w, LE);
                int o = w * 4 * L;
                ints(v.and(b)).sub(off).mul(scale).intoArray(out, o);
                ints(v.lanewise(SHR, 8).and(b)).sub(off).mul(scale).intoArray(out, o + L);
                ints(v.lanewise(SHR, 16).and(b)).sub(off).mul(scale).intoArray(out, o + 2 * L);
                ints(v.lanewise(SHR, 24)).sub(off).mul(scale).intoArray(out, o + 3 * L);
            }
        }
    }

    /** Small integers to float, exactly. Short enough for the JIT to inline always (under 35 bytecodes). */
    private static FloatVector ints(IntVector p) {
        return (FloatVector) p.convert(VectorOperators.I2F, 0);
    }
}
