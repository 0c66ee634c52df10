package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.moe4j.backend.cuda.Workspace.Slot;
import io.moe4j.backend.cuda.driver.CudaEvent;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import io.moe4j.routing.Router;
import io.moe4j.routing.RouterKind;
import io.moe4j.routing.RouterSpec;
import io.moe4j.routing.Routing;
import io.moe4j.routing.TokenRouter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.Consumer;

/**
 * A layer's {@link Router} on the GPU (router.cu): float64 logits from the router weights uploaded once, then each
 * token's selection with the host router's rules (scores, DeepSeek's group mask, top-k with ties to the lower
 * expert, weights, choices sorted by expert). On the host the router is a float64 pass over E x H weights per token
 * (gpt-oss: 92 k multiply-adds, ~90 us; DeepSeek-V3: 1.8 M, ~1.8 ms), more than the whole experts stage on the GPU.
 * Thread-safe: a call's buffers and stream come from a pool.
 */
final class CudaRouter implements TokenRouter {
    /** The kernel's limits (router.cu: ROUTER_PER_LANE x 32 experts, ROUTER_MAX_K, a 32-bit group mask). */
    static final int MAX_EXPERTS = 512;
    static final int MAX_TOP_K = 32;
    static final int MAX_GROUPS = 32;
    /** Batches up to this size take the block-per-expert logits kernel (router.cu ROUTER_TOKENS). */
    static final int ROW_TOKENS = 16;
    private static final int SELECT_WARPS = 4;
    private static final int TILE = 64;
    /** Column slices of the tile kernel are at least this many columns (the slices' partial sums cost a pass). */
    private static final int MIN_SLICE = 128;
    /** Blocks of the copy-in kernel (x of up to 16 tokens: a few hundred KB at most). */
    private static final int COPY_IN_BLOCKS = 64;

    private final RouterSpec spec;
    private final int hidden;
    private final CudaEngine engine;
    private final DeviceBuffer weight;
    private final DeviceBuffer bias;
    private final DeviceBuffer correction;
    private final KernelCache.Kernel rows;
    private final KernelCache.Kernel tile;
    private final KernelCache.Kernel select;
    /** Decode batches' copy of x through mapped pinned memory (CudaTuning.mappedTransfers), or null. */
    private final KernelCache.Kernel copyIn;
    private final WorkspacePool pool;

    private CudaRouter(RouterSpec spec, int hidden, CudaEngine engine, DeviceBuffer weight, DeviceBuffer bias,
            DeviceBuffer correction, boolean mappedTransfers) {
        this.spec = spec;
        this.hidden = hidden;
        this.engine = engine;
        this.weight = weight;
        this.bias = bias;
        this.correction = correction;
        this.pool = new WorkspacePool(engine.context());
        // compiled and loaded now, not on the first call
        this.rows = engine.kernels().get("router.cu", "moe_router_logits_rows", List.of());
        this.tile = engine.kernels().get("router.cu", "moe_router_logits_tile", List.of());
        this.select = engine.kernels().get("router.cu", "moe_router_select", selectDefines(spec));
        this.copyIn = mappedTransfers ? engine.kernels().get("moe_rows.cu", "moe_copy_in", List.of()) : null;
    }

    /** Why the device router cannot take this router, or null when it can. */
    static String unsupportedReason(RouterSpec spec) {
        if (spec.numExperts() > MAX_EXPERTS) {
            return "the device router takes up to " + MAX_EXPERTS + " experts, not " + spec.numExperts();
        }
        if (spec.topK() > MAX_TOP_K) {
            return "the device router takes top-k up to " + MAX_TOP_K + ", not " + spec.topK();
        }
        if (spec.kind() == RouterKind.SIGMOID_GROUPED_TOPK && spec.groups() > MAX_GROUPS) {
            return "the device router takes up to " + MAX_GROUPS + " expert groups, not " + spec.groups();
        }
        return null;
    }

    /**
     * Uploads the router's weights; the caller checked {@link #unsupportedReason}. With {@code mappedTransfers},
     * decode batches (up to {@link #ROW_TOKENS} tokens) copy x in with a kernel and write their choices straight
     * to pinned host memory, as the experts' small batches do, instead of two copy-engine transfers.
     */
    static CudaRouter upload(CudaEngine engine, Router router, boolean mappedTransfers) {
        String reason = unsupportedReason(router.spec());
        if (reason != null) {
            throw new IllegalArgumentException(reason);
        }
        DeviceBuffer w = null;
        DeviceBuffer b = null;
        DeviceBuffer c = null;
        try {
            w = CudaBackend.floats(engine.context(), router.weight());
            b = CudaBackend.floats(engine.context(), router.bias());
            c = CudaBackend.floats(engine.context(), router.correction());
            return new CudaRouter(router.spec(), router.hidden(), engine, w, b, c, mappedTransfers); // compiles them
        } catch (RuntimeException e) {
            for (DeviceBuffer d : new DeviceBuffer[] {w, b, c}) {
                if (d != null) {
                    d.close();
                }
            }
            throw e;
        }
    }

    @Override
    public String where() {
        return "cuda (" + engine.context().device().name() + ", float64 logits)";
    }

    @Override
    public Routing route(float[] x, int tokens) {
        return route(x, tokens, null, null, null);
    }

    /**
     * {@link #route(float[], int)}, with {@code start} and {@code end} (both or neither) recorded around the two
     * kernels on the call's stream (for benchmarks). With a {@code lead}, the work it queues (a busy wait) goes on the stream before
     * the start event, keeping the GPU busy while the host submits the kernels: start..end is then the
     * kernels' GPU time alone, without the copies or the submission.
     */
    Routing route(float[] x, int tokens, CudaEvent start, CudaEvent end, Consumer<CudaStream> lead) {
        int k = spec.topK();
        if (tokens < 0 || x.length < (long) tokens * hidden) {
            throw new IllegalArgumentException("x must hold " + tokens + " x " + hidden + " values, has " + x.length);
        }
        if (tokens == 0) {
            return new Routing(0, k, new int[0], new float[0], spec.weightOnInput());
        }
        engine.context().makeCurrent();
        return pool.call(ws -> run(ws, x, tokens, start, end, lead));
    }

    private Routing run(Workspace ws, float[] x, int tokens, CudaEvent start, CudaEvent end, Consumer<CudaStream> lead) {
        int e = spec.numExperts();
        int k = spec.topK();
        long xBytes = 4L * tokens * hidden;
        long choiceBytes = 4L * tokens * k;
        MemorySegment staging = ws.pinned(xBytes + 2 * choiceBytes);
        HostCopy.toSegment(x, staging, tokens * hidden);
        CudaStream stream = ws.stream();
        DeviceBuffer dx = ws.buffer(Slot.X, xBytes);
        int slices = tokens <= ROW_TOKENS ? 1 : slices(tokens);
        DeviceBuffer logits = ws.buffer(Slot.LOGITS, 8L * slices * tokens * e);
        DeviceBuffer choices = ws.buffer(Slot.CHOICES, 2 * choiceBytes);
        MemorySegment out = staging.asSlice(xBytes, 2 * choiceBytes);
        boolean mapped = copyIn != null && tokens <= ROW_TOKENS;
        if (!mapped) {
            dx.copyFromAsync(staging.asSlice(0, xBytes), 0, stream);
        }
        if (lead != null) {
            lead.accept(stream);
        }
        if (start != null) {
            start.record(stream);
        }
        long choiceOut = mapped ? out.address() : choices.pointer();
        try (Arena arena = Arena.ofConfined()) {
            if (mapped) {
                int words = tokens * hidden;
                KernelArgs copyArgs = new KernelArgs(arena).pointer(staging.address()).pointer(dx).i32(words)
                        .pointer(0L).i32(0).pointer(0L).i32(0);
                copyIn.function().launch(Math.min(COPY_IN_BLOCKS, Math.ceilDiv(words, 256)), 1, 1, 256, 1, 1, 0,
                        stream, copyArgs);
            }
            KernelArgs logitArgs = new KernelArgs(arena).pointer(dx).pointer(weight).pointer(logits).i32(tokens)
                    .i32(e).i32(hidden);
            if (tokens <= ROW_TOKENS) {
                rows.function().launch(e, 1, 1, 256, 1, 1, 0, stream, logitArgs);
            } else {
                tile.function().launch(Math.ceilDiv(e, TILE), Math.ceilDiv(tokens, TILE), slices, 256, 1, 1, 0,
                        stream, logitArgs);
            }
        }
        launchSelect(select, stream, spec, logits.pointer(), slices, CudaExperts.pointerOf(bias),
                CudaExperts.pointerOf(correction), choiceOut, choiceOut + choiceBytes, tokens, 0, null);
        if (end != null) {
            end.record(stream);
        }
        if (!mapped) {
            choices.copyToAsync(out, 0, stream);
        }
        stream.synchronize();
        int[] ids = new int[tokens * k];
        float[] weights = new float[tokens * k];
        MemorySegment.copy(out, JAVA_INT, 0, ids, 0, ids.length);
        MemorySegment.copy(out, JAVA_FLOAT, choiceBytes, weights, 0, weights.length);
        return new Routing(tokens, k, ids, weights, spec.weightOnInput());
    }

    /**
     * Column slices for the tile kernel: enough blocks for two per multiprocessor where the tiles alone leave the
     * GPU idle (decode-sized batches of a few dozen experts), each slice at least {@link #MIN_SLICE} columns.
     */
    private int slices(int tokens) {
        long tiles = (long) Math.ceilDiv(spec.numExperts(), TILE) * Math.ceilDiv(tokens, TILE);
        long wanted = Math.ceilDiv(2L * engine.context().device().multiprocessors(), tiles);
        return (int) Math.max(1, Math.min(wanted, hidden / MIN_SLICE));
    }

    /**
     * Launches moe_router_select ({@code select}, compiled with {@link #selectDefines}) on {@code stream}, one warp a
     * token: the choices of {@code tokens} tokens from their logits ([slices][tokens][E] float64, summed in slice
     * order, plus {@code bias} float32 [E] unless 0; {@code correction}: DeepSeek's, or 0) into {@code ids} and
     * {@code weights} ([tokens, k] int32 and float32, sorted by expert). {@code early}: the next kernel may launch
     * at its entry (moe4j_common.cuh). {@code plan}: a one-token pass's routing plan written there too, or null.
     */
    static void launchSelect(KernelCache.Kernel select, CudaStream stream, RouterSpec spec, long logits, int slices,
            long bias, long correction, long ids, long weights, int tokens, int early, CudaExperts.DevicePlan plan) {
        int e = spec.numExperts();
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(logits).i32(slices).pointer(bias).pointer(correction)
                    .pointer(ids).pointer(weights).i32(tokens).i32(e).i32(spec.topK()).i32(kindCode(spec.kind()))
                    .i32(spec.renormalize() ? 1 : 0).i32(spec.groups()).i32(spec.topkGroups())
                    .f64(spec.routedScalingFactor()).i32(early);
            if (plan == null) {
                args.pointer(0L).i32(0).pointer(0L).i32(0);
            } else {
                args.pointer(plan.meta()).i32((int) (plan.span() / 4)).pointer(plan.routes())
                        .i32(plan.direct1() ? 1 : 0);
            }
            select.function().launch(Math.ceilDiv(tokens, SELECT_WARPS), 1, 1, 32 * SELECT_WARPS, 1, 1,
                    SELECT_WARPS * 3 * 8 * e, stream, args);
        }
    }

    /**
     * moe_router_select compiled for this router alone: its kind and ceil(E / 32) experts a lane, so that the kernel
     * holds none of the other kinds' code (it is instruction-fetch bound on a decode step's critical path).
     */
    static List<String> selectDefines(RouterSpec spec) {
        return List.of("-DMOE4J_ROUTER_KIND=" + kindCode(spec.kind()),
                "-DROUTER_PER_LANE=" + Math.max(1, Math.ceilDiv(spec.numExperts(), 32)));
    }

    /** KIND_* of router.cu. */
    static int kindCode(RouterKind kind) {
        return switch (kind) {
            case SOFTMAX_TOPK -> 0;
            case TOPK_SOFTMAX -> 1;
            case SIGMOID_GROUPED_TOPK -> 2;
            case SIGMOID_TOP1_ON_INPUT -> 3;
        };
    }

    @Override
    public void close() {
        engine.context().makeCurrent();
        pool.close();
        for (DeviceBuffer d : new DeviceBuffer[] {weight, bias, correction}) {
            if (d != null) {
                d.close();
            }
        }
    }
}
