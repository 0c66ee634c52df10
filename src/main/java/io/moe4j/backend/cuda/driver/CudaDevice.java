package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The facts about one device that kernels and launch sizes depend on, read once through the driver.
 *
 * @param ordinal             the CUDA device index
 * @param name                e.g. "NVIDIA H100 80GB HBM3"
 * @param major               compute capability major (9 on Hopper)
 * @param minor               compute capability minor
 * @param multiprocessors     SM count, for sizing grids
 * @param totalMemory         bytes of device memory
 * @param l2CacheBytes        bytes of L2, for benchmarks that must not measure the cache
 * @param maxSharedPerBlockOptIn the most dynamic shared memory a block may ask for after opting in
 */
public record CudaDevice(int ordinal, String name, int major, int minor, int multiprocessors, long totalMemory,
        int l2CacheBytes, int maxSharedPerBlockOptIn) {

    /** Reads device {@code ordinal}; cuInit must have succeeded. */
    public static CudaDevice query(CudaDriver cu, int ordinal) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(JAVA_INT);
            cu.check("cuDeviceGet", cu.cuDeviceGet(handle, ordinal));
            int dev = handle.get(JAVA_INT, 0);
            MemorySegment name = arena.allocate(256);
            cu.check("cuDeviceGetName", cu.cuDeviceGetName(name, 256, dev));
            MemorySegment total = arena.allocate(JAVA_LONG);
            cu.check("cuDeviceTotalMem_v2", cu.cuDeviceTotalMem(total, dev));
            return new CudaDevice(dev, name.getString(0), attribute(cu, arena, dev, CudaDriver.ATTR_COMPUTE_CAPABILITY_MAJOR),
                    attribute(cu, arena, dev, CudaDriver.ATTR_COMPUTE_CAPABILITY_MINOR),
                    attribute(cu, arena, dev, CudaDriver.ATTR_MULTIPROCESSOR_COUNT), total.get(JAVA_LONG, 0),
                    attribute(cu, arena, dev, CudaDriver.ATTR_L2_CACHE_SIZE),
                    attribute(cu, arena, dev, CudaDriver.ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
        }
    }

    private static int attribute(CudaDriver cu, Arena arena, int dev, int attribute) {
        MemorySegment value = arena.allocate(JAVA_INT);
        cu.check("cuDeviceGetAttribute(" + attribute + ")", cu.cuDeviceGetAttribute(value, attribute, dev));
        return value.get(JAVA_INT, 0);
    }

    /** Compute capability as 90 for 9.0. */
    public int computeCapability() {
        return major * 10 + minor;
    }

    /** Whether kernels compiled for this device may use wgmma (sm_90a: Hopper's warpgroup MMA). */
    public boolean hasWgmma() {
        return major == 9 && minor == 0;
    }

    /**
     * The NVRTC target for this device: {@code sm_90a} on Hopper (the arch-specific target unlocks wgmma and
     * setmaxnreg, and a CUBIN for it runs only on 9.0 — which is the device in hand), {@code sm_XY} elsewhere.
     */
    public String nvrtcArchitecture() {
        return "sm_" + computeCapability() + (hasWgmma() ? "a" : "");
    }

    public String summary() {
        return String.format("%s (sm_%d, %d SMs, %.1f GiB, L2 %d MiB)", name, computeCapability(), multiprocessors,
                totalMemory / (double) (1L << 30), l2CacheBytes >> 20);
    }
}
