package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * Entry point: asks whether CUDA can run here ({@link #probe()}, which never throws) and opens a device.
 */
public final class CudaRuntime {
    private CudaRuntime() {
    }

    private static volatile CudaProbe cached;

    /**
     * Probes this machine once per process: loads {@code libcuda.so.1}, initialises the driver, counts devices,
     * reads the first one, and locates NVRTC. Returns "unavailable" with the reason on any failure — a missing
     * library, no device, a driver error, native access not enabled — and never throws, so callers can decide
     * on a backend from it on machines without a GPU.
     */
    public static CudaProbe probe() {
        CudaProbe p = cached;
        if (p == null) {
            p = probe("libcuda.so.1", null);
            cached = p;
        }
        return p;
    }

    /** {@link #probe()} with the driver soname and NVRTC search given (null: the process-wide NVRTC), for tests. */
    public static CudaProbe probe(String driverSoname, NvrtcLocator nvrtcLocator) {
        try {
            return probeOrThrow(driverSoname, nvrtcLocator);
        } catch (Throwable t) {
            // Anything (IllegalCallerException without --enable-native-access, LinkageError, ...) is a reason.
            return CudaProbe.unavailable("CUDA probe failed: " + t, Optional.empty(), 0, 0);
        }
    }

    private static CudaProbe probeOrThrow(String driverSoname, NvrtcLocator nvrtcLocator) {
        CudaDriver cu;
        try {
            cu = "libcuda.so.1".equals(driverSoname) ? CudaDriver.get()
                    : CudaDriver.load(NativeLibrary.bySoname(driverSoname));
        } catch (IllegalArgumentException e) {
            return CudaProbe.unavailable("CUDA driver library " + driverSoname + " not found (no NVIDIA driver "
                    + "installed, or not on the loader path): " + e.getMessage(), Optional.empty(), 0, 0);
        }
        int driverVersion;
        int deviceCount;
        try (Arena arena = Arena.ofConfined()) {
            int init = cu.cuInit(0);
            if (init != 0) {
                return CudaProbe.unavailable("cuInit failed: " + cu.describe(init), Optional.empty(), 0, 0);
            }
            MemorySegment value = arena.allocate(JAVA_INT);
            cu.check("cuDriverGetVersion", cu.cuDriverGetVersion(value));
            driverVersion = value.get(JAVA_INT, 0);
            cu.check("cuDeviceGetCount", cu.cuDeviceGetCount(value));
            deviceCount = value.get(JAVA_INT, 0);
            if (deviceCount == 0) {
                return CudaProbe.unavailable("the CUDA driver reports no device", Optional.empty(), 0, driverVersion);
            }
        } catch (CudaException e) {
            return CudaProbe.unavailable(e.getMessage(), Optional.empty(), 0, 0);
        }
        CudaDevice device;
        try {
            device = CudaDevice.query(cu, 0);
        } catch (CudaException e) {
            return CudaProbe.unavailable("reading device 0 failed: " + e.getMessage(), Optional.empty(), deviceCount,
                    driverVersion);
        }
        Nvrtc nvrtc;
        try {
            nvrtc = nvrtcLocator == null ? Nvrtc.get() : Nvrtc.load(nvrtcLocator);
        } catch (CudaException e) {
            return CudaProbe.unavailable(e.getMessage(), Optional.of(device), deviceCount, driverVersion);
        }
        return new CudaProbe(true, device.summary() + ", driver CUDA " + versionString(driverVersion) + ", NVRTC "
                + versionString(nvrtc.version()) + " from " + nvrtc.library(), Optional.of(device), deviceCount, driverVersion,
                Optional.of(nvrtc.library()));
    }

    /** Opens device {@code ordinal}'s primary context and makes it current on this thread. */
    public static CudaContext open(int ordinal) {
        CudaDriver cu = CudaDriver.get();
        cu.check("cuInit", cu.cuInit(0));
        return CudaContext.retainPrimary(cu, CudaDevice.query(cu, ordinal));
    }

    static String versionString(int v) {
        return (v / 1000) + "." + (v % 1000) / 10;
    }
}
