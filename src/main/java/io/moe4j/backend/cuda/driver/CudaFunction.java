package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A kernel of a loaded {@link CudaModule}: its resource attributes and its launch. */
public final class CudaFunction {
    private final CudaDriver cu;
    private final String name;
    private final MemorySegment handle;
    private final boolean overlapReady;

    CudaFunction(CudaDriver cu, String name, MemorySegment handle, boolean overlapReady) {
        this.cu = cu;
        this.name = name;
        this.handle = handle;
        this.overlapReady = overlapReady;
    }

    /** Whether this kernel follows the overlapped launch protocol (declared by whoever loaded it). */
    public boolean overlapReady() {
        return overlapReady;
    }

    public String name() {
        return name;
    }

    /** A CUfunction_attribute, e.g. {@link CudaDriver#FUNC_NUM_REGS}. */
    public int attribute(int attribute) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_INT);
            cu.check("cuFuncGetAttribute(" + name + ")", cu.cuFuncGetAttribute(value, attribute, handle));
            return value.get(JAVA_INT, 0);
        }
    }

    /** Raises the dynamic shared memory a launch may ask for above the default 48 KiB. */
    public void setMaxDynamicSharedBytes(int bytes) {
        cu.check("cuFuncSetAttribute(" + name + ")",
                cu.cuFuncSetAttribute(handle, CudaDriver.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
    }

    /** Blocks of {@code blockSize} threads that fit on one SM at once. */
    public int maxActiveBlocksPerSm(int blockSize, long dynamicSharedBytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_INT);
            cu.check("cuOccupancyMaxActiveBlocksPerMultiprocessor(" + name + ")",
                    cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(value, handle, blockSize, dynamicSharedBytes));
            return value.get(JAVA_INT, 0);
        }
    }

    /** "regs=.. local=..B static-shared=..B" for logs: spills show as local bytes. */
    public String resources() {
        return String.format("regs=%d local=%dB static-shared=%dB", attribute(CudaDriver.FUNC_NUM_REGS),
                attribute(CudaDriver.FUNC_LOCAL_SIZE_BYTES), attribute(CudaDriver.FUNC_SHARED_SIZE_BYTES));
    }

    // CUlaunchConfig and CUlaunchAttribute (cuda.h, CUDA 12+): grid and block dims and dynamic shared bytes as seven
    // u32, the stream at 32, the attribute array at 40, their count at 48 (56 bytes); an attribute is an id (u32) at
    // 0 and a 64-byte value union at 8 (72 bytes).
    private static final long CONFIG_BYTES = 56;
    private static final long ATTRIBUTE_BYTES = 72;
    private static final int PROGRAMMATIC_STREAM_SERIALIZATION = 6;
    private static final int COOPERATIVE = 2;

    /**
     * Enqueues one launch on {@code stream}; the arguments are copied by the driver before this returns. While the
     * stream records overlapped launches and this kernel is {@link #overlapReady()}, the launch allows programmatic
     * stream serialization: the kernel may start before the previous one on the stream has finished.
     */
    public void launch(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int dynamicSharedBytes,
            CudaStream stream, KernelArgs args) {
        boolean overlapped = overlapReady && stream.overlapping();
        int r;
        if (overlapped) {
            r = launchEx(PROGRAMMATIC_STREAM_SERIALIZATION, gridX, gridY, gridZ, blockX, blockY, blockZ,
                    dynamicSharedBytes, stream, args);
        } else {
            r = cu.cuLaunchKernel(handle, gridX, gridY, gridZ, blockX, blockY, blockZ, dynamicSharedBytes,
                    stream.handle(), args.pointers(), MemorySegment.NULL);
        }
        if (r != 0) {
            String call = overlapped ? "cuLaunchKernelEx" : "cuLaunchKernel";
            throw new CudaException(call, r, call + "(" + name + ", grid " + gridX + "x" + gridY + "x" + gridZ
                    + ", block " + blockX + "x" + blockY + "x" + blockZ + ", shared " + dynamicSharedBytes
                    + (overlapped ? ", overlapped" : "") + ") failed: " + cu.describe(r));
        }
    }

    /**
     * Enqueues one cooperative launch on {@code stream}: every block of the grid is resident at once (the driver
     * refuses a grid that does not fit; size it by {@link #maxActiveBlocksPerSm}), so its blocks may wait for each
     * other. Needs cuLaunchKernelEx (CUDA 12+).
     */
    public void launchCooperative(int gridX, int gridY, int blockX, CudaStream stream, KernelArgs args) {
        if (!cu.hasLaunchKernelEx()) {
            throw new IllegalStateException("cooperative launches need cuLaunchKernelEx, which this CUDA driver (before"
                    + " 12.0) lacks");
        }
        int r = launchEx(COOPERATIVE, gridX, gridY, 1, blockX, 1, 1, 0, stream, args);
        if (r != 0) {
            throw new CudaException("cuLaunchKernelEx", r, "cuLaunchKernelEx(" + name + ", grid " + gridX + "x" + gridY
                    + ", block " + blockX + ", cooperative) failed: " + cu.describe(r));
        }
    }

    /** cuLaunchKernelEx with one launch attribute of value 1. */
    private int launchEx(int attributeId, int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int dynamicSharedBytes, CudaStream stream, KernelArgs args) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attribute = arena.allocate(ATTRIBUTE_BYTES, 8);
            attribute.set(JAVA_INT, 0, attributeId);
            attribute.set(JAVA_INT, 8, 1);
            MemorySegment config = arena.allocate(CONFIG_BYTES, 8);
            int[] dims = {gridX, gridY, gridZ, blockX, blockY, blockZ, dynamicSharedBytes};
            for (int i = 0; i < dims.length; i++) {
                config.set(JAVA_INT, 4L * i, dims[i]);
            }
            config.set(ADDRESS, 32, stream.handle());
            config.set(ADDRESS, 40, attribute);
            config.set(JAVA_INT, 48, 1);
            return cu.cuLaunchKernelEx(config, handle, args.pointers(), MemorySegment.NULL);
        }
    }
}
