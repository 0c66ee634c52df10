package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaEvent;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import java.util.Arrays;

/**
 * The roofline for weights that are only read on the GPU: the device's measured copy bandwidth
 * (cuMemcpyDtoD of 2 GiB, bytes read plus written per second), what {@code moe bench --backend cuda} compares
 * effective weight bandwidth against.
 */
public final class DeviceBandwidth {
    /** Timed copies after two warm-up copies; the median is reported. */
    private static final int REPLAYS = 7;
    /** Far larger than any L2, so the copy streams DRAM both ways. */
    private static final long BYTES = 2L << 30;

    private DeviceBandwidth() {
    }

    /** GB/s on device 0, through the same shared context the cuda backend runs in. */
    public static double copyGbps() {
        CudaEngine engine = CudaEngine.shared();
        try (CudaStream stream = engine.context().createStream()) {
            return copyGbps(engine.context(), stream);
        }
    }

    /** GB/s (bytes read plus written) of a 2 GiB device-to-device copy on {@code stream}, median of the replays. */
    static double copyGbps(CudaContext ctx, CudaStream stream) {
        try (DeviceBuffer a = ctx.allocate(BYTES); DeviceBuffer b = ctx.allocate(BYTES);
                CudaEvent start = ctx.createEvent(); CudaEvent end = ctx.createEvent()) {
            a.fill((byte) 0x5A);
            double[] ms = new double[REPLAYS];
            for (int i = -2; i < REPLAYS; i++) {
                start.record(stream);
                b.copyFromDeviceAsync(a, 0, 0, BYTES, stream);
                end.record(stream);
                end.synchronize();
                if (i >= 0) {
                    ms[i] = end.elapsedMillisSince(start);
                }
            }
            Arrays.sort(ms);
            return 2.0 * BYTES / (ms[REPLAYS / 2] * 1e-3) / 1e9;
        }
    }
}
