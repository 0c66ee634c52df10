package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaStream;

/**
 * The roofline for weights that are only read on the GPU: the device's measured copy bandwidth
 * (cuMemcpyDtoD of 2 GiB, bytes read plus written per second), what {@code moe bench --backend cuda} compares
 * effective weight bandwidth against.
 */
public final class DeviceBandwidth {
    private DeviceBandwidth() {
    }

    /** GB/s on device 0, through the same shared context the cuda backend runs in. */
    public static double copyGbps() {
        CudaEngine engine = CudaEngine.shared();
        try (CudaStream stream = engine.context().createStream()) {
            return CudaGemvBench.copyBandwidth(engine.context(), stream);
        }
    }
}
