package io.moe4j.backend.cuda;

import java.lang.foreign.MemorySegment;

/**
 * A stack of E experts' weight matrices [E, N, K] in one packed format, in host memory (typically slices of a
 * memory-mapped checkpoint), for the grouped GEMVs under test and measurement ({@link RowGemv#upload}, and
 * {@link Mxfp4Gemv#upload} through {@link #mxfp4()}). Layouts, row-major:
 * <ul>
 *   <li>MXFP4: codes [E, N, K/2] bytes, element 2i in the low nibble of byte i; scales [E, N, K/32] E8M0 bytes;
 *       K a multiple of 32.</li>
 *   <li>BF16: codes [E, N, K] little-endian bf16; no scales.</li>
 *   <li>FP8_E4M3: codes [E, N, K] E4M3FN bytes; scales [E, N] float32, one per output row.</li>
 *   <li>INT4: codes [E, N, K/2] bytes as MXFP4, nibble u meaning u - 8; scales [E, N, K/group] bf16; group a
 *       multiple of 32 dividing K, or K itself (one scale per row).</li>
 * </ul>
 * Both segments must be native memory: uploads hand them to the driver directly.
 *
 * @param group INT4's scale group along K; ignored (0) for the other formats
 * @param scales {@link MemorySegment#NULL} for BF16
 */
record RowStack(RowFormat format, int experts, int rows, int cols, int group, MemorySegment codes,
        MemorySegment scales) {

    RowStack {
        if (experts <= 0 || rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("expert stack shape must be positive: " + experts + "x" + rows + "x" + cols);
        }
        switch (format) {
            case MXFP4 -> require(cols % 32 == 0, "MXFP4 needs K a multiple of 32 (one E8M0 scale per 32), got " + cols);
            case INT4 -> {
                require(cols % 2 == 0, "INT4 packs two per byte: K must be even, got " + cols);
                require(group > 0 && cols % group == 0 && (group % 32 == 0 || group == cols),
                        "INT4 group must divide K and be a multiple of 32 or K itself; got group " + group + ", K " + cols);
            }
            case BF16, FP8_E4M3 -> { }
        }
        long rowsTotal = (long) experts * rows;
        requireSize("codes", codes, rowsTotal * format.codeBytesPerRow(cols));
        if (format == RowFormat.BF16) {
            require(scales == null || scales.byteSize() == 0, "BF16 has no scales");
            scales = MemorySegment.NULL;
        } else {
            requireSize("scales", scales, rowsTotal * format.scaleBytesPerRow(cols, group));
        }
        require(codes.isNative() && (scales.byteSize() == 0 || scales.isNative()),
                "weights must be in native memory (mapped or arena-allocated), not on the Java heap");
    }

    /** This MXFP4 stack as the engine's tensor-core GEMV takes it. */
    Mxfp4Stack mxfp4() {
        require(format == RowFormat.MXFP4, "not an MXFP4 stack: " + format);
        return new Mxfp4Stack(experts, rows, cols, codes, scales);
    }

    /** Bytes of one expert as stored (codes plus scales): what a GEMV must read per routed expert. */
    long bytesPerExpert() {
        return rows * (format.codeBytesPerRow(cols) + format.scaleBytesPerRow(cols, group));
    }

    private static void requireSize(String what, MemorySegment segment, long expected) {
        require(segment != null && segment.byteSize() == expected,
                what + " must be " + expected + " bytes, got " + (segment == null ? "none" : segment.byteSize()));
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
