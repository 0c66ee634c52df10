package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory from {@code cuMemHostAlloc}, freed on {@link #close()}. Asynchronous copies from and to
 * it overlap with the host and may be recorded in a graph; copies from pageable memory are staged by the driver.
 */
public final class PinnedBuffer implements AutoCloseable {
    private final CudaDriver cu;
    private final MemorySegment base;
    private final MemorySegment segment;
    private boolean closed;

    private PinnedBuffer(CudaDriver cu, MemorySegment base, long bytes) {
        this.cu = cu;
        this.base = base;
        this.segment = base.reinterpret(bytes);
    }

    /** Allocates {@code bytes} of pinned memory in the current context. */
    public static PinnedBuffer allocate(CudaDriver cu, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("pinned allocation of " + bytes + " bytes");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int r = cu.cuMemHostAlloc(out, bytes, 0);
            if (r != 0) {
                throw new CudaException("cuMemHostAlloc", r, "cuMemHostAlloc of " + bytes + " bytes failed: " + cu.describe(r));
            }
            return new PinnedBuffer(cu, out.get(ADDRESS, 0), bytes);
        }
    }

    /** The memory, valid until {@link #close()}. */
    public MemorySegment segment() {
        if (closed) {
            throw new IllegalStateException("pinned buffer already freed");
        }
        return segment;
    }

    public long byteSize() {
        return segment.byteSize();
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            cu.check("cuMemFreeHost", cu.cuMemFreeHost(base));
        }
    }
}
