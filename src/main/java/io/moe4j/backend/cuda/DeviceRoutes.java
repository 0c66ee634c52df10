package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.DeviceBuffer;

import java.util.EnumMap;
import java.util.Map;

/**
 * The device memory of MoE layers routed on the device ({@link ModelOps#routeAndRunExperts}): the router's choices,
 * the routing plan built from them, and the experts' intermediate rows. One instance serves every layer of a pass in
 * turn (they run one after another on one stream). Its buffers keep their addresses until a larger batch grows one,
 * which bumps {@link #generation()}: a recorded step that names the old addresses must then be recorded again.
 */
public final class DeviceRoutes implements AutoCloseable {
    enum Slot {
        /** expert ids [tokens, k], int32, as moe_router_select writes them. */
        IDS,
        /** router weights [tokens, k], float32. */
        WEIGHTS,
        /** the plan's int arrays (moe_route_plan). */
        META,
        /** the GEMMs' (expert, row) routes, int2 [2 pairs]. */
        ROUTES,
        /** GEMM1's input rows per pair, when it cannot read the tokens as they are. */
        IN1,
        /** the tile GEMM1's input exponent a pair (its rows then f16). */
        EXP1,
        /** GEMM1's output per pair. */
        H,
        /** GEMM2's input per pair. */
        ACT,
        /** the tile GEMM2's input exponent a pair. */
        EXP2,
        /** GEMM2's output per pair. */
        Y
    }

    private final CudaContext context;
    private final Map<Slot, DeviceBuffer> buffers = new EnumMap<>(Slot.class);
    private long generation;

    DeviceRoutes(CudaContext context) {
        this.context = context;
    }

    /** The slot's buffer, at least {@code bytes} long (grown, never shrunk). */
    DeviceBuffer buffer(Slot slot, long bytes) {
        DeviceBuffer b = buffers.get(slot);
        if (b == null || b.byteSize() < bytes) {
            if (b != null) {
                b.close();
                buffers.remove(slot);
            }
            context.makeCurrent();
            b = context.allocate(Math.max(bytes, 256));
            buffers.put(slot, b);
            generation++;
        }
        return b;
    }

    /** Bumped whenever a buffer moves. */
    public long generation() {
        return generation;
    }

    @Override
    public void close() {
        buffers.values().forEach(DeviceBuffer::close);
        buffers.clear();
    }
}
