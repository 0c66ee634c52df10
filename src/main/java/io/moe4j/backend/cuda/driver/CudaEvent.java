package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A CUDA event, for timing device work between two points of a stream. */
public final class CudaEvent implements AutoCloseable {
    private final CudaDriver cu;
    private final MemorySegment handle;
    private boolean closed;

    private CudaEvent(CudaDriver cu, MemorySegment handle) {
        this.cu = cu;
        this.handle = handle;
    }

    static CudaEvent create(CudaDriver cu) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            cu.check("cuEventCreate", cu.cuEventCreate(out, 0)); // CU_EVENT_DEFAULT: timing enabled
            return new CudaEvent(cu, out.get(ADDRESS, 0));
        }
    }

    public void record(CudaStream stream) {
        cu.check("cuEventRecord", cu.cuEventRecord(handle(), stream.handle()));
    }

    public void synchronize() {
        cu.check("cuEventSynchronize", cu.cuEventSynchronize(handle()));
    }

    /** Milliseconds of device time from {@code start} to this event (both recorded and completed). */
    public float elapsedMillisSince(CudaEvent start) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ms = arena.allocate(JAVA_FLOAT);
            cu.check("cuEventElapsedTime", cu.cuEventElapsedTime(ms, start.handle(), handle()));
            return ms.get(JAVA_FLOAT, 0);
        }
    }

    MemorySegment handle() {
        if (closed) {
            throw new IllegalStateException("event already destroyed");
        }
        return handle;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            cu.check("cuEventDestroy_v2", cu.cuEventDestroy(handle));
        }
    }
}
