package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A device's primary context, retained for as long as this object is open. The primary context is the one the
 * CUDA runtime and other libraries in the process share, so buffers made here can be handed to them. Every
 * other object of this package works in the context current on the calling thread: call {@link #makeCurrent()}
 * on each thread that uses the device.
 */
public final class CudaContext implements AutoCloseable {
    private final CudaDriver cu;
    private final CudaDevice device;
    private final MemorySegment handle;
    private boolean closed;

    private CudaContext(CudaDriver cu, CudaDevice device, MemorySegment handle) {
        this.cu = cu;
        this.device = device;
        this.handle = handle;
    }

    static CudaContext retainPrimary(CudaDriver cu, CudaDevice device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            cu.check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(out, device.ordinal()));
            CudaContext ctx = new CudaContext(cu, device, out.get(ADDRESS, 0));
            ctx.makeCurrent();
            return ctx;
        }
    }

    public CudaDevice device() {
        return device;
    }

    public CudaDriver driver() {
        return cu;
    }

    public void makeCurrent() {
        cu.check("cuCtxSetCurrent", cu.cuCtxSetCurrent(handle));
    }

    /** Waits for all work in the context; surfaces asynchronous kernel faults as a {@link CudaException}. */
    public void synchronize() {
        cu.check("cuCtxSynchronize", cu.cuCtxSynchronize());
    }

    /** Free and total device memory in bytes, as the driver sees them now. */
    public long[] memoryInfo() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(JAVA_LONG);
            MemorySegment total = arena.allocate(JAVA_LONG);
            cu.check("cuMemGetInfo_v2", cu.cuMemGetInfo(free, total));
            return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
        }
    }

    public DeviceBuffer allocate(long bytes) {
        return DeviceBuffer.allocate(cu, bytes);
    }

    /** Page-locked host memory, for asynchronous copies. */
    public PinnedBuffer allocatePinned(long bytes) {
        return PinnedBuffer.allocate(cu, bytes);
    }

    public CudaStream createStream() {
        return CudaStream.create(cu);
    }

    public CudaEvent createEvent() {
        return CudaEvent.create(cu);
    }

    public CudaModule loadModule(byte[] image) {
        return CudaModule.load(cu, image);
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            cu.check("cuDevicePrimaryCtxRelease_v2", cu.cuDevicePrimaryCtxRelease(device.ordinal()));
        }
    }
}
