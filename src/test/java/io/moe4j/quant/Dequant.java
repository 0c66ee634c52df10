package io.moe4j.quant;

import io.moe4j.format.Bf16;
import io.moe4j.format.E8m0;
import io.moe4j.format.ElementFormat;
import io.moe4j.format.MxCodec;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Test helper: one row of an ExpertMatrix as floats, straight from its javadoc, using the format decoders. */
public final class Dequant {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Dequant() {
    }

    public static float[] row(ExpertMatrix m, int e, int r) {
        float[] out = new float[m.cols()];
        MemorySegment row = m.data().asSlice(m.rowOffset(e, r), m.rowBytes());
        for (int c = 0; c < m.cols(); c++) {
            double code = code(m.codes(), row, c);
            BlockScales s = m.blockScales();
            if (s != null) {
                int g = m.group(e, r, c);
                long off = s.offset(e, r / s.blockRows(), g);
                if (m.zeroPoints() != null) {
                    code -= m.zeroPoints().get(ValueLayout.JAVA_BYTE, off / s.type().bytes());
                }
                code *= switch (s.type()) {
                    case E8M0 -> E8m0.decode(s.data().get(ValueLayout.JAVA_BYTE, off));
                    case E4M3 -> ElementFormat.E4M3FN.decode(s.data().get(ValueLayout.JAVA_BYTE, off));
                    case F32 -> s.data().get(F32, off);
                };
            }
            out[c] = (float) (code * m.shardScale(e, r));
        }
        return out;
    }

    static double code(CodeType t, MemorySegment row, int c) {
        return switch (t) {
            case F32 -> row.get(F32, 4L * c);
            case BF16 -> Bf16.toFloat(row.get(I16, 2L * c));
            case F16 -> Float.float16ToFloat(row.get(I16, 2L * c));
            case FP8_E4M3 -> ElementFormat.E4M3FN.decode(row.get(ValueLayout.JAVA_BYTE, c));
            case FP8_E5M2 -> ElementFormat.E5M2.decode(row.get(ValueLayout.JAVA_BYTE, c));
            case FP4_E2M1 -> ElementFormat.E2M1.decode(MxCodec.fp4Code(row, c));
            case FP6_E3M2 -> ElementFormat.E3M2.decode(MxCodec.fp6Code(row, c));
            case FP6_E2M3 -> ElementFormat.E2M3.decode(MxCodec.fp6Code(row, c));
            case INT8 -> row.get(ValueLayout.JAVA_BYTE, c);
            case INT4 -> {
                int b = row.get(ValueLayout.JAVA_BYTE, c >> 1);
                int nibble = (c & 1) == 0 ? b & 0xF : (b >> 4) & 0xF;
                yield nibble >= 8 ? nibble - 16 : nibble;
            }
        };
    }
}
