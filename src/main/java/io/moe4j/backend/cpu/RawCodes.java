package io.moe4j.backend.cpu;

import io.moe4j.format.MxCodec;
import io.moe4j.quant.ExpertMatrix;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Reads the raw codes of one row of an {@link ExpertMatrix} as the checkpoint packs them (see {@code CodeType}):
 * bit patterns for the float types, signed integers for INT4 and INT8. Used once, when packing.
 */
final class RawCodes {
    private final ExpertMatrix m;
    private final byte[] row;

    RawCodes(ExpertMatrix m) {
        this.m = m;
        this.row = new byte[Math.toIntExact(m.rowBytes())];
    }

    /** Writes the cols codes of row r of expert e into out[0, cols). */
    void read(int expert, int r, int[] out) {
        MemorySegment.copy(m.data(), ValueLayout.JAVA_BYTE, m.rowOffset(expert, r), row, 0, row.length);
        int cols = m.cols();
        switch (m.codes()) {
            case F32 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = (row[4 * c] & 0xFF) | (row[4 * c + 1] & 0xFF) << 8 | (row[4 * c + 2] & 0xFF) << 16
                            | (row[4 * c + 3] & 0xFF) << 24;
                }
            }
            case BF16, F16 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = (row[2 * c] & 0xFF) | (row[2 * c + 1] & 0xFF) << 8;
                }
            }
            case FP8_E4M3, FP8_E5M2 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = row[c] & 0xFF;
                }
            }
            case FP4_E2M1 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = MxCodec.fp4Code(row, c);
                }
            }
            case FP6_E3M2, FP6_E2M3 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = MxCodec.fp6Code(row, c);
                }
            }
            case INT8 -> {
                for (int c = 0; c < cols; c++) {
                    out[c] = row[c];
                }
            }
            case INT4 -> {
                for (int c = 0; c < cols; c++) {
                    // Sign-extend the two's-complement nibble.
                    out[c] = (MxCodec.fp4Code(row, c) ^ 8) - 8;
                }
            }
        }
    }
}
