package io.moe4j.backend.cuda;

import java.lang.foreign.MemorySegment;

/**
 * A stack of E experts' OCP MXFP4 weight matrices [E, N, K] in host memory (typically slices of a memory-mapped
 * checkpoint), as {@link Mxfp4Gemv#upload} takes it: codes [E, N, K/2] bytes, element 2i in the low nibble of byte i;
 * scales [E, N, K/32] E8M0 bytes; K a multiple of 32. Both segments must be native memory: the upload hands them to
 * the driver directly.
 */
public record Mxfp4Stack(int experts, int rows, int cols, MemorySegment codes, MemorySegment scales) {

    public Mxfp4Stack {
        if (experts <= 0 || rows <= 0 || cols <= 0) {
            throw new IllegalArgumentException("expert stack shape must be positive: " + experts + "x" + rows + "x" + cols);
        }
        require(cols % 32 == 0, "MXFP4 needs K a multiple of 32 (one E8M0 scale per 32), got " + cols);
        long rowsTotal = (long) experts * rows;
        requireSize("codes", codes, rowsTotal * (cols / 2));
        requireSize("scales", scales, rowsTotal * (cols / 32));
        require(codes.isNative() && scales.isNative(),
                "weights must be in native memory (mapped or arena-allocated), not on the Java heap");
    }

    /** Bytes of one expert as stored (codes plus scales): what a GEMV must read per routed expert. */
    public long bytesPerExpert() {
        return (long) rows * (cols / 2 + cols / 32);
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
