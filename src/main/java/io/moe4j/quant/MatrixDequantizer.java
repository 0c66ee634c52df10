package io.moe4j.quant;

import io.moe4j.format.E8m0;
import io.moe4j.format.ElementFormat;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Dequantizes rows of an {@link ExpertMatrix} to float, element by element, exactly as its javadoc defines the
 * value. Scalar and plain on purpose: it is the reference the emulation backend and the tests stand on, not a
 * fast path. Stateless and thread-safe.
 */
public final class MatrixDequantizer {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private MatrixDequantizer() {
    }

    /** Writes the {@code cols} values of row {@code row} of expert {@code expert} into out[0, cols). */
    public static void row(ExpertMatrix m, int expert, int row, float[] out) {
        decodeCodes(m, expert, row, out);
        BlockScales s = m.blockScales();
        if (s != null) {
            int rb = row / s.blockRows();
            for (int c = 0; c < m.cols(); c++) {
                int g = m.group(expert, row, c);
                long off = s.offset(expert, rb, g);
                float code = out[c];
                if (m.zeroPoints() != null) {
                    code -= m.zeroPoints().get(ValueLayout.JAVA_BYTE, off / s.type().bytes());
                }
                out[c] = code * scale(s, off);
            }
        }
        float shard = m.shardScale(expert, row);
        if (shard != 1f) {
            for (int c = 0; c < m.cols(); c++) {
                out[c] *= shard;
            }
        }
    }

    /** The value of one block scale at byte offset {@code off}. */
    public static float scale(BlockScales s, long off) {
        MemorySegment d = s.data();
        return switch (s.type()) {
            case E8M0 -> E8m0.decode(d.get(ValueLayout.JAVA_BYTE, off) & 0xFF);
            case E4M3 -> ElementFormat.E4M3FN.decode(d.get(ValueLayout.JAVA_BYTE, off) & 0xFF);
            case F32 -> d.get(F32, off);
        };
    }

    private static void decodeCodes(ExpertMatrix m, int expert, int row, float[] out) {
        MemorySegment d = m.data();
        long base = m.rowOffset(expert, row);
        int cols = m.cols();
        switch (m.codes()) {
            case F32 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = d.get(F32, base + 4L * c);
                }
            }
            case BF16 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = Float.intBitsToFloat((d.get(I16, base + 2L * c) & 0xFFFF) << 16);
                }
            }
            case F16 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = Float.float16ToFloat(d.get(I16, base + 2L * c));
                }
            }
            case FP8_E4M3 -> byteTable(d, base, cols, ElementFormat.E4M3FN, out);
            case FP8_E5M2 -> byteTable(d, base, cols, ElementFormat.E5M2, out);
            case FP4_E2M1 -> {
                for (int c = 0; c < cols; c++) {
                    int b = d.get(ValueLayout.JAVA_BYTE, base + (c >> 1)) & 0xFF;
                    out[c] = ElementFormat.E2M1.decode((c & 1) == 0 ? b & 0xF : b >>> 4);
                }
            }
            case FP6_E3M2, FP6_E2M3 -> {
                ElementFormat f = m.codes() == CodeType.FP6_E3M2 ? ElementFormat.E3M2 : ElementFormat.E2M3;
                MemorySegment rowSeg = d.asSlice(base, m.rowBytes());
                for (int c = 0; c < cols; c++) {
                    out[c] = f.decode(io.moe4j.format.MxCodec.fp6Code(rowSeg, c));
                }
            }
            case INT8 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = d.get(ValueLayout.JAVA_BYTE, base + c);
                }
            }
            case INT4 -> {
                for (int c = 0; c < cols; c++) {
                    int b = d.get(ValueLayout.JAVA_BYTE, base + (c >> 1));
                    int nibble = (c & 1) == 0 ? b & 0xF : (b >>> 4) & 0xF;
                    out[c] = (nibble ^ 8) - 8;
                }
            }
        }
    }

    private static void byteTable(MemorySegment d, long base, int cols, ElementFormat f, float[] out) {
        for (int c = 0; c < cols; c++) {
            out[c] = f.decode(d.get(ValueLayout.JAVA_BYTE, base + c) & 0xFF);
        }
    }
}
