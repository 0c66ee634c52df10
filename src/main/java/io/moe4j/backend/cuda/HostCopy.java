package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import java.lang.foreign.MemorySegment;
import java.util.stream.IntStream;

/**
 * Copies between the caller's float[] and the pinned staging memory the DMA engines read and write. At prefill these
 * are tens of MB each way (4096 tokens x 2880 floats = 47 MB), and one thread's memcpy took several ms of a layer
 * call whose GPU time is ~4 ms; large copies are split over the common fork-join pool, small ones stay on the
 * calling thread.
 */
final class HostCopy {
    /** Below this many floats (4 MiB) one thread copies: a decode batch is a few KB. */
    static final int PARALLEL_FROM = 1 << 20;
    /** Floats per parallel piece (1 MiB). */
    static final int PIECE = 1 << 18;

    private HostCopy() {
    }

    /** dst[0, 4n) = src[0, n) as floats. */
    static void toSegment(float[] src, MemorySegment dst, int n) {
        if (n < PARALLEL_FROM) {
            MemorySegment.copy(src, 0, dst, JAVA_FLOAT, 0, n);
            return;
        }
        IntStream.range(0, Math.ceilDiv(n, PIECE)).parallel().forEach(i -> {
            int from = i * PIECE;
            MemorySegment.copy(src, from, dst, JAVA_FLOAT, 4L * from, Math.min(PIECE, n - from));
        });
    }

    /** dst[0, n) = src[0, 4n) as floats. */
    static void fromSegment(MemorySegment src, float[] dst, int n) {
        if (n < PARALLEL_FROM) {
            MemorySegment.copy(src, JAVA_FLOAT, 0, dst, 0, n);
            return;
        }
        IntStream.range(0, Math.ceilDiv(n, PIECE)).parallel().forEach(i -> {
            int from = i * PIECE;
            MemorySegment.copy(src, JAVA_FLOAT, 4L * from, dst, from, Math.min(PIECE, n - from));
        });
    }
}
