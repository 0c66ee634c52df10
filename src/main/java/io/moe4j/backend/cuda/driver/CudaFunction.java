package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** A kernel of a loaded {@link CudaModule}: its resource attributes and its launch. */
public final class CudaFunction {
    private final CudaDriver cu;
    private final String name;
    private final MemorySegment handle;

    CudaFunction(CudaDriver cu, String name, MemorySegment handle) {
        this.cu = cu;
        this.name = name;
        this.handle = handle;
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

    /** Enqueues one launch on {@code stream}; the arguments are copied by the driver before this returns. */
    public void launch(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int dynamicSharedBytes,
            CudaStream stream, KernelArgs args) {
        int r = cu.cuLaunchKernel(handle, gridX, gridY, gridZ, blockX, blockY, blockZ, dynamicSharedBytes,
                stream.handle(), args.pointers(), MemorySegment.NULL);
        if (r != 0) {
            throw new CudaException("cuLaunchKernel", r, "cuLaunchKernel(" + name + ", grid " + gridX + "x" + gridY
                    + "x" + gridZ + ", block " + blockX + "x" + blockY + "x" + blockZ + ", shared " + dynamicSharedBytes
                    + ") failed: " + cu.describe(r));
        }
    }
}
