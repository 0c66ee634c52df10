package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A CUDA stream: an in-order queue of copies and launches. Non-blocking, so it never syncs with stream 0. */
public final class CudaStream implements AutoCloseable {
    private static final int CU_STREAM_NON_BLOCKING = 1;
    private static final int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

    private final CudaDriver cu;
    private final MemorySegment handle;
    private boolean closed;
    private boolean overlapping;

    private CudaStream(CudaDriver cu, MemorySegment handle) {
        this.cu = cu;
        this.handle = handle;
    }

    static CudaStream create(CudaDriver cu) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            cu.check("cuStreamCreate", cu.cuStreamCreate(out, CU_STREAM_NON_BLOCKING));
            return new CudaStream(cu, out.get(ADDRESS, 0));
        }
    }

    MemorySegment handle() {
        if (closed) {
            throw new IllegalStateException("stream already destroyed");
        }
        return handle;
    }

    /**
     * The CUstream itself, for a library that takes a {@code cudaStream_t} (the runtime's name for the same handle),
     * such as NCCL. The stream stays owned by this object.
     */
    public MemorySegment nativeHandle() {
        return handle();
    }

    /** Whether launches on this stream are being recorded as overlapped launches (inside such a capture). */
    boolean overlapping() {
        return overlapping;
    }

    public void synchronize() {
        cu.check("cuStreamSynchronize", cu.cuStreamSynchronize(handle()));
    }

    /**
     * Records everything {@code work} enqueues on this stream into a graph instead of running it, and returns the
     * instantiated graph: replaying it launches the same kernels with far less host overhead per launch.
     */
    public CudaGraph capture(Runnable work) {
        return capture(work, false);
    }

    /**
     * As {@link #capture(Runnable)}; with {@code overlapKernels}, the kernels whose functions follow the overlapped
     * launch protocol ({@link CudaFunction#overlapReady()}) are recorded with programmatic dependent launch: in the
     * graph each may start while the kernel before it is still running, and waits for it inside (griddepcontrol).
     * Only devices of compute capability 9.0 and later take it, and only a CUDA 12.0+ driver records it (an older
     * one is refused here with an {@link IllegalStateException}).
     */
    public CudaGraph capture(Runnable work, boolean overlapKernels) {
        if (overlapKernels && !cu.hasLaunchKernelEx()) {
            throw new IllegalStateException("overlapped launches need cuLaunchKernelEx, which this CUDA driver (before"
                    + " 12.0) does not export");
        }
        cu.check("cuStreamBeginCapture_v2", cu.cuStreamBeginCapture(handle(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        RuntimeException failure = null;
        overlapping = overlapKernels;
        try {
            work.run();
        } catch (RuntimeException e) {
            failure = e;
        } finally {
            overlapping = false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment graph = arena.allocate(ADDRESS);
            int ended = cu.cuStreamEndCapture(handle(), graph);
            if (failure != null) {
                throw failure;
            }
            cu.check("cuStreamEndCapture", ended);
            return CudaGraph.instantiate(cu, graph.get(ADDRESS, 0));
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            cu.check("cuStreamDestroy_v2", cu.cuStreamDestroy(handle));
        }
    }
}
