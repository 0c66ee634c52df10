package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.PinnedBuffer;
import java.lang.foreign.MemorySegment;
import java.util.EnumMap;
import java.util.Map;

/**
 * The device memory and stream one forward call works in. A call takes a workspace from its owner's
 * {@link WorkspacePool} and gives it back, so concurrent calls never share one and consecutive calls reuse the
 * memory; buffers grow to the largest batch seen (half again, so that slowly growing batches do not reallocate every
 * call).
 */
final class Workspace implements AutoCloseable {
    /** The per-call arrays. */
    enum Slot {
        /** tokens x H input, float32. */
        X,
        /** the routing plan's int arrays. */
        META,
        /** the GEMV's (expert, row) routes of both GEMMs. */
        ROUTES,
        /** GEMM1 input rows per pair (quantized, reordered or scaled), and their exponents for f16 rows. */
        IN1, EXP1,
        /** GEMM1 output per pair. */
        H,
        /** GEMM2 input per pair, and exponents. */
        ACT, EXP2,
        /** GEMM2 output per pair. */
        Y,
        /** tokens x H output. */
        OUT,
        /** the router's float64 logits, tokens x E. */
        LOGITS,
        /** the router's choices: tokens x k expert ids, then tokens x k weights. */
        CHOICES
    }

    private final CudaContext context;
    private final CudaStream stream;
    private final Map<Slot, DeviceBuffer> buffers = new EnumMap<>(Slot.class);
    private PinnedBuffer pinned;
    /** Bumped whenever a device buffer is replaced: recorded launches name the old addresses. */
    private long generation;
    private Object lastOwner;
    private Object lastLaunch;
    private long lastGeneration = -1;
    private Object graphOwner;
    private Object graphLaunch;
    private long graphGeneration = -1;
    private io.moe4j.backend.cuda.driver.CudaGraph graph;

    /** A recorded graph for a launch, or whether the same launch ran just before (then it is worth recording). */
    record Replay(io.moe4j.backend.cuda.driver.CudaGraph graph, boolean seenBefore) {
    }

    Workspace(CudaContext context) {
        this.context = context;
        this.stream = context.createStream();
    }

    CudaStream stream() {
        return stream;
    }

    /** The slot's buffer, at least {@code bytes} long. */
    DeviceBuffer buffer(Slot slot, long bytes) {
        DeviceBuffer b = buffers.get(slot);
        if (b == null || b.byteSize() < bytes) {
            if (b != null) {
                b.close();
                buffers.remove(slot);
            }
            long size = b == null ? Math.max(bytes, 256) : Math.max(bytes, b.byteSize() + b.byteSize() / 2);
            b = context.allocate(size);
            buffers.put(slot, b);
            generation++;
        }
        return b;
    }

    /**
     * The graph recorded for {@code launch} of {@code owner} (the experts whose weights the graph names: a workspace
     * may serve several layers) in this workspace's current buffers, if any; otherwise remembers the launch, so that
     * a second identical one is recorded ({@link #keep}) rather than the first: by then every kernel is compiled and
     * loaded, which must not happen while a stream records.
     */
    Replay replay(Object owner, Object launch) {
        if (graph != null && graphGeneration == generation && graphOwner == owner && graphLaunch.equals(launch)) {
            return new Replay(graph, true);
        }
        boolean seen = lastGeneration == generation && lastOwner == owner && launch.equals(lastLaunch);
        lastOwner = owner;
        lastLaunch = launch;
        lastGeneration = generation;
        return new Replay(null, seen);
    }

    /** Keeps {@code recorded} as the graph of {@code owner}'s {@code launch} (one graph per workspace: decode repeats one shape). */
    void keep(Object owner, Object launch, io.moe4j.backend.cuda.driver.CudaGraph recorded) {
        if (graph != null) {
            graph.close();
        }
        graph = recorded;
        graphOwner = owner;
        graphLaunch = launch;
        graphGeneration = generation;
    }

    /** Page-locked host memory of at least {@code bytes}, for the call's copies in and out. */
    MemorySegment pinned(long bytes) {
        if (pinned == null || pinned.byteSize() < bytes) {
            long size = pinned == null ? Math.max(bytes, 4096) : Math.max(bytes, pinned.byteSize() + pinned.byteSize() / 2);
            if (pinned != null) {
                pinned.close();
            }
            pinned = null;
            pinned = context.allocatePinned(size);
        }
        return pinned.segment();
    }

    @Override
    public void close() {
        stream.synchronize();
        if (graph != null) {
            graph.close();
        }
        buffers.values().forEach(DeviceBuffer::close);
        buffers.clear();
        if (pinned != null) {
            pinned.close();
        }
        stream.close();
    }
}
