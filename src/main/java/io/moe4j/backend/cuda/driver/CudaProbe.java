package io.moe4j.backend.cuda.driver;

import java.util.Optional;

/**
 * What {@link CudaRuntime#probe()} found: either a usable device with NVRTC, or the reason there is none
 * (library missing, no device, driver error, compiler missing), phrased for a person reading a log.
 *
 * @param available  whether kernels can be compiled and run here
 * @param reason     why not when unavailable; a one-line summary of the device when available
 * @param device     the first device, when one was found
 * @param deviceCount devices the driver reports (0 when it did not load or has none)
 * @param driverVersion the driver's CUDA version as 13000 for 13.0, or 0 when the driver did not load
 * @param nvrtcLibrary where NVRTC was loaded from, when it was
 */
public record CudaProbe(boolean available, String reason, Optional<CudaDevice> device, int deviceCount,
        int driverVersion, Optional<String> nvrtcLibrary) {

    static CudaProbe unavailable(String reason, Optional<CudaDevice> device, int deviceCount, int driverVersion) {
        return new CudaProbe(false, reason, device, deviceCount, driverVersion, Optional.empty());
    }
}
