package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A loaded CUBIN or PTX image; its functions stay valid until {@link #close()} unloads it. */
public final class CudaModule implements AutoCloseable {
    private final CudaDriver cu;
    private final MemorySegment handle;
    private boolean closed;

    private CudaModule(CudaDriver cu, MemorySegment handle) {
        this.cu = cu;
        this.handle = handle;
    }

    static CudaModule load(CudaDriver cu, byte[] image) {
        try (Arena arena = Arena.ofConfined()) {
            // PTX must be NUL-terminated text; a trailing zero is harmless after a CUBIN.
            MemorySegment data = arena.allocate(image.length + 1L, 16);
            MemorySegment.copy(image, 0, data, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, image.length);
            MemorySegment out = arena.allocate(ADDRESS);
            cu.check("cuModuleLoadData", cu.cuModuleLoadData(out, data));
            return new CudaModule(cu, out.get(ADDRESS, 0));
        }
    }

    /** The {@code extern "C"} kernel called {@code name}. */
    public CudaFunction function(String name) {
        return function(name, false);
    }

    /**
     * The {@code extern "C"} kernel called {@code name}; {@code overlapReady} declares that it follows the overlapped
     * launch protocol (it waits for the prior kernel before touching data it wrote), see {@link CudaFunction#launch}.
     */
    public CudaFunction function(String name, boolean overlapReady) {
        if (closed) {
            throw new IllegalStateException("module already unloaded");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int r = cu.cuModuleGetFunction(out, handle, arena.allocateFrom(name));
            if (r != 0) {
                throw new CudaException("cuModuleGetFunction", r, "cuModuleGetFunction(" + name + ") failed: "
                        + cu.describe(r));
            }
            return new CudaFunction(cu, name, out.get(ADDRESS, 0), overlapReady);
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            cu.check("cuModuleUnload", cu.cuModuleUnload(handle));
        }
    }
}
