package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

import static io.moe4j.backend.cpu.VectorSlots.bf16;
import static io.moe4j.backend.cpu.VectorSlots.f16;
import static io.moe4j.backend.cpu.VectorSlots.fp4;
import static io.moe4j.backend.cpu.VectorSlots.fp6e2m3;
import static io.moe4j.backend.cpu.VectorSlots.fp6e3m2;
import static io.moe4j.backend.cpu.VectorSlots.fp8e4m3;
import static io.moe4j.backend.cpu.VectorSlots.fp8e5m2;
import static io.moe4j.backend.cpu.VectorSlots.int4p;
import static io.moe4j.backend.cpu.VectorSlots.int8p;

/**
 * Decodes one panel (8 rows) of a {@link PanelMatrix} into exact weight values in a per-worker scratch buffer,
 * out[c·8 + lane] for packed column c: the tile that the multi-token kernel ({@link VectorPanelDot}) then streams
 * once per token from cache. Only a panel is ever dequantized, never a matrix.
 */
final class VectorPanelDecoder {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int L = PanelMatrix.LANES;

    private VectorPanelDecoder() {
    }

    static void decode(PanelMatrix m, int expert, int panel, float[] out) {
        ColumnPlan plan = m.plan(expert);
        LaneCodec codec = m.codec();
        int slots = codec.slots();
        float unbias = Math.scalb(1f, codec.bias());
        for (int g = 0; g < plan.segments(); g++) {
            int w0 = plan.segmentWords()[g];
            int w1 = plan.segmentWords()[g + 1];
            if (w0 == w1) {
                continue;
            }
            FloatVector scale = VectorScales.scale(m, expert, panel, g);
            long at = m.wordOffset(expert, panel, w0);
            int o = w0 * slots * L;
            if (codec.offset() != 0) {
                // Integers: (p − (offset + zero)) · scale = (code − zero) · scale, rounded once.
                FloatVector off = VectorScales.zero(m, expert, panel, g).add(codec.offset());
                if (codec == LaneCodec.INT4) {
                    int4Words(m.words(), at, w1 - w0, out, o, off, scale);
                } else {
                    int8Words(m.words(), at, w1 - w0, out, o, off, scale);
                }
                continue;
            }
            // Floats: value·2^-bias · (scale·2^bias) is value · scale, rounded once, when scale·2^bias is finite;
            // otherwise multiply by 2^bias and the scale one after the other.
            FloatVector mul = scale.mul(unbias);
            FloatVector then = FloatVector.broadcast(F, 1f);
            if (!mul.test(VectorOperators.IS_FINITE).allTrue()) {
                mul = FloatVector.broadcast(F, unbias);
                then = scale;
            }
            int n = w1 - w0;
            switch (codec) {
                case FP4 -> fp4Words(m.words(), at, n, out, o, mul, then);
                case FP6_E3M2 -> fp6e3m2Words(m.words(), at, n, out, o, mul, then);
                case FP6_E2M3 -> fp6e2m3Words(m.words(), at, n, out, o, mul, then);
                case FP8_E4M3 -> fp8e4m3Words(m.words(), at, n, out, o, mul, then);
                case FP8_E5M2 -> fp8e5m2Words(m.words(), at, n, out, o, mul, then);
                case F16 -> f16Words(m.words(), at, n, out, o, mul, then);
                case BF16 -> bf16Words(m.words(), at, n, out, o, mul, then);
                case F32 -> f32Words(m.words(), at, n, out, o, mul, then);
                default -> throw new IllegalStateException(codec.toString());
            }
        }
    }

    private static void put(IntVector bits, FloatVector mul, FloatVector then, float[] out, int o) {
        bits.reinterpretAsFloats().mul(mul).mul(then).intoArray(out, o);
    }

    private static void fp4Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector mul, FloatVector then) {
        for (int w = 0; w < n; w++, at += 32, o += 8 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            put(fp4(v, 0), mul, then, out, o);
            put(fp4(v, 1), mul, then, out, o + L);
            put(fp4(v, 2), mul, then, out, o + 2 * L);
            put(fp4(v, 3), mul, then, out, o + 3 * L);
            put(fp4(v, 4), mul, then, out, o + 4 * L);
            put(fp4(v, 5), mul, then, out, o + 5 * L);
            put(fp4(v, 6), mul, then, out, o + 6 * L);
            put(fp4(v, 7), mul, then, out, o + 7 * L);
        }
    }

    private static void fp6e3m2Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector mul, FloatVector then) {
        for (int w = 0; w < n; w++, at += 32, o += 5 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            put(fp6e3m2(v, 0), mul, then, out, o);
            put(fp6e3m2(v, 1), mul, then, out, o + L);
            put(fp6e3m2(v, 2), mul, then, out, o + 2 * L);
            put(fp6e3m2(v, 3), mul, then, out, o + 3 * L);
            put(fp6e3m2(v, 4), mul, then, out, o + 4 * L);
        }
    }

    private static void fp6e2m3Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector mul, FloatVector then) {
        for (int w = 0; w < n; w++, at += 32, o += 5 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            put(fp6e2m3(v, 0), mul, then, out, o);
            put(fp6e2m3(v, 1), mul, then, out, o + L);
            put(fp6e2m3(v, 2), mul, then, out, o + 2 * L);
            put(fp6e2m3(v, 3), mul, then, out, o + 3 * L);
            put(fp6e2m3(v, 4), mul, then, out, o + 4 * L);
        }
    }

    private static void fp8e4m3Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector mul, FloatVector then) {
        for (int w = 0; w < n; w++, at += 32, o += 4 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            put(fp8e4m3(v, 0), mul, then, out, o);
            put(fp8e4m3(v, 1), mul, then, out, o + L);
            put(fp8e4m3(v, 2), mul, then, out, o + 2 * L);
            put(fp8e4m3(v, 3), mul, then, out, o + 3 * L);
        }
    }

    private static void fp8e5m2Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector mul, FloatVector then) {
        for (int w = 0; w < n; w++, at += 32, o += 4 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            put(fp8e5m2(v, 0), mul, then, out, o);
            put(fp8e5m2(v, 1), mul, then, out, o + L);
            put(fp8e5m2(v, 2), mul, then, out, o + 2 * L);
            put(fp8e5m2(v, 3), mul, then, out, o + 3 * L);
        }
    }

    private static void f16Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector mul, FloatVector then) {
        for (int w = 0; w < n; w++, at += 32, o += 2 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            put(f16(v, 0), mul, then, out, o);
            put(f16(v, 1), mul, then, out, o + L);
        }
    }

    private static void bf16Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector mul, FloatVector then) {
        for (int w = 0; w < n; w++, at += 32, o += 2 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            put(bf16(v, 0), mul, then, out, o);
            put(bf16(v, 1), mul, then, out, o + L);
        }
    }

    private static void f32Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector mul, FloatVector then) {
        for (int w = 0; w < n; w++, at += 32, o += L) {
            put(IntVector.fromMemorySegment(I, s, at, LE), mul, then, out, o);
        }
    }

    private static void putInt(IntVector p, FloatVector off, FloatVector scale, float[] out, int o) {
        ((FloatVector) p.convert(VectorOperators.I2F, 0)).sub(off).mul(scale).intoArray(out, o);
    }

    private static void int4Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector off, FloatVector scale) {
        for (int w = 0; w < n; w++, at += 32, o += 8 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            putInt(int4p(v, 0), off, scale, out, o);
            putInt(int4p(v, 1), off, scale, out, o + L);
            putInt(int4p(v, 2), off, scale, out, o + 2 * L);
            putInt(int4p(v, 3), off, scale, out, o + 3 * L);
            putInt(int4p(v, 4), off, scale, out, o + 4 * L);
            putInt(int4p(v, 5), off, scale, out, o + 5 * L);
            putInt(int4p(v, 6), off, scale, out, o + 6 * L);
            putInt(int4p(v, 7), off, scale, out, o + 7 * L);
        }
    }

    private static void int8Words(MemorySegment s, long at, int n, float[] out, int o, FloatVector off, FloatVector scale) {
        for (int w = 0; w < n; w++, at += 32, o += 4 * L) {
            IntVector v = IntVector.fromMemorySegment(I, s, at, LE);
            putInt(int8p(v, 0), off, scale, out, o);
            putInt(int8p(v, 1), off, scale, out, o + L);
            putInt(int8p(v, 2), off, scale, out, o + 2 * L);
            putInt(int8p(v, 3), off, scale, out, o + 3 * L);
        }
    }
}
