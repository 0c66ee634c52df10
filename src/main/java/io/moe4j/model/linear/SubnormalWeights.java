package io.moe4j.model.linear;

import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Keeps subnormal floats out of the CPU kernels' unquantized weights, on which x86 cores run 50–100× slower: BF16
 * and F32 subnormals (below 2^-126 in magnitude, a change no float32 sum of real activations can see) become zeros
 * of the same sign; F16 weights with subnormals (below 2^-14, which small weights do reach) are widened to F32
 * instead, exactly. A matrix without subnormals is returned as it is (still mapped); one with them is copied into
 * the arena.
 */
final class SubnormalWeights {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private SubnormalWeights() {
    }

    static ExpertMatrix normalize(ExpertMatrix m, Arena arena) {
        return switch (m.codes()) {
            case BF16 -> hasSubnormal16(m.data(), 0x7F80) ? withData(m, flush16(m.data(), arena)) : m;
            case F16 -> hasSubnormal16(m.data(), 0x7C00) ? widenF16(m, arena) : m;
            case F32 -> hasSubnormal32(m.data()) ? withData(m, flush32(m.data(), arena)) : m;
            default -> m;
        };
    }

    private static ExpertMatrix withData(ExpertMatrix m, MemorySegment data) {
        return new ExpertMatrix(m.experts(), m.rows(), m.cols(), m.codes(), data, m.blockScales(), m.zeroPoints(),
                m.shardScales(), m.shardRows(), m.groupIndex());
    }

    private static boolean subnormal16(short v, int expMask) {
        return (v & expMask) == 0 && (v & 0x7FFF) != 0;
    }

    private static boolean hasSubnormal16(MemorySegment d, int expMask) {
        for (long i = 0, n = d.byteSize(); i < n; i += 2) {
            if (subnormal16(d.get(I16, i), expMask)) {
                return true;
            }
        }
        return false;
    }

    private static MemorySegment flush16(MemorySegment d, Arena arena) {
        MemorySegment out = arena.allocate(d.byteSize(), 64);
        for (long i = 0, n = d.byteSize(); i < n; i += 2) {
            short v = d.get(I16, i);
            out.set(I16, i, subnormal16(v, 0x7F80) ? (short) (v & 0x8000) : v);
        }
        return out;
    }

    private static boolean hasSubnormal32(MemorySegment d) {
        for (long i = 0, n = d.byteSize(); i < n; i += 4) {
            int v = d.get(I32, i);
            if ((v & 0x7F800000) == 0 && (v & 0x7FFFFFFF) != 0) {
                return true;
            }
        }
        return false;
    }

    private static MemorySegment flush32(MemorySegment d, Arena arena) {
        MemorySegment out = arena.allocate(d.byteSize(), 64);
        for (long i = 0, n = d.byteSize(); i < n; i += 4) {
            int v = d.get(I32, i);
            out.set(I32, i, (v & 0x7F800000) == 0 ? v & 0x80000000 : v);
        }
        return out;
    }

    private static ExpertMatrix widenF16(ExpertMatrix m, Arena arena) {
        MemorySegment d = m.data();
        MemorySegment out = arena.allocate(d.byteSize() * 2, 64);
        for (long i = 0, n = d.byteSize() / 2; i < n; i++) {
            out.set(F32, 4 * i, Float.float16ToFloat(d.get(I16, 2 * i)));
        }
        return new ExpertMatrix(m.experts(), m.rows(), m.cols(), CodeType.F32, out, m.blockScales(), m.zeroPoints(),
                m.shardScales(), m.shardRows(), m.groupIndex());
    }
}
