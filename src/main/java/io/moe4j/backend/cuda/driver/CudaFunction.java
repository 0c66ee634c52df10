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

    /** CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION. */
    private static final int ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

    /** Whether {@link #launchProgrammatic} can overlap launches here (driver with cuLaunchKernelEx, sm_90+). */
    public static boolean programmaticLaunches(CudaDriver cu, CudaDevice device) {
        return cu.hasLaunchKernelEx() && device.major() >= 9;
    }

    /**
     * Enqueues one launch that may start before the previous kernel on {@code stream} ends (programmatic dependent
     * launch): once every block of that kernel has run {@code griddepcontrol.launch_dependents} or exited. The
     * kernel must run {@code griddepcontrol.wait} before it touches anything the previous kernel writes or reads.
     * Only where {@link #programmaticLaunches} says so.
     */
    public void launchProgrammatic(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ,
            int dynamicSharedBytes, CudaStream stream, KernelArgs args) {
        try (Arena arena = Arena.ofConfined()) {
            // CUlaunchAttribute: id (4 bytes), pad to 8, value union of 64 bytes; the flag is its first int.
            MemorySegment attribute = arena.allocate(72, 8);
            attribute.set(JAVA_INT, 0, ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
            attribute.set(JAVA_INT, 8, 1);
            // CUlaunchConfig: grid x y z, block x y z, shared (7 uints), stream at 32, attrs at 40, numAttrs at 48.
            MemorySegment config = arena.allocate(56, 8);
            int[] dims = {gridX, gridY, gridZ, blockX, blockY, blockZ, dynamicSharedBytes};
            for (int i = 0; i < dims.length; i++) {
                config.set(JAVA_INT, 4L * i, dims[i]);
            }
            config.set(ADDRESS, 32, stream.handle());
            config.set(ADDRESS, 40, attribute);
            config.set(JAVA_INT, 48, 1);
            int r = cu.cuLaunchKernelEx(config, handle, args.pointers(), MemorySegment.NULL);
            if (r != 0) {
                throw new CudaException("cuLaunchKernelEx", r, "cuLaunchKernelEx(" + name + ", grid " + gridX + "x"
                        + gridY + "x" + gridZ + ", block " + blockX + ", shared " + dynamicSharedBytes
                        + ", programmatic) failed: " + cu.describe(r));
            }
        }
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
