package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.moe4j.backend.Experts;
import io.moe4j.backend.cuda.Workspace.Slot;
import io.moe4j.backend.cuda.driver.CudaDriver;
import io.moe4j.backend.cuda.driver.CudaEvent;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A layer's experts on the GPU. One forward call, all on the call's own stream:
 * <ol>
 *   <li>host: the routing plan (pairs sorted by expert); x and the plan go to the device in two copies</li>
 *   <li>{@code moe_prepare_rows}: each pair's GEMM1 input, quantize-dequantized per scheme (skipped when the
 *       GEMV can read the tokens as they are)</li>
 *   <li>GEMM1: the MXFP4 tensor-core GEMV (up to four pairs of one expert a block) or tile GEMM, or the CUDA-core
 *       GEMM for the other formats</li>
 *   <li>{@code moe_activate_rows}: + bias, activation, the scheme's quantize-dequantize of GEMM2's input</li>
 *   <li>GEMM2, then {@code moe_combine}: + bias, router weights, sum over each token's experts</li>
 *   <li>the output back to the host</li>
 * </ol>
 * Thread-safe: a call's state lives in a {@link Workspace} taken from a {@link WorkspacePool} and in locals.
 */
final class CudaExperts implements Experts {
    private static final int ROW_THREADS = 256;
    private static final int MAX_GRID_Y = 65535;
    /** Blocks of the copy-in kernel: enough loads in flight to cover the bus latency for a few hundred KB. */
    private static final int COPY_IN_BLOCKS = 128;

    private final ExpertWeights w;
    private final CudaEngine engine;
    private final CudaTuning tuning;
    private final DeviceMatrix w13;
    private final DeviceMatrix w2;
    private final DeviceBuffer bias13;
    private final DeviceBuffer bias2;
    private final DeviceQuant a13;
    private final DeviceQuant a2;
    /** Whether MXFP4 tile GEMMs run on the wgmma kernel: fixed by the device, the tuning and the weights. */
    private final boolean wgmmaTiles;
    private final WorkspacePool pool;
    /** Whether recorded graphs launch their kernels overlapped (programmatic dependent launch, sm_90+). */
    private final boolean overlapped;
    /**
     * Routed pairs an expert (on average) from which a plan built on the device takes the MXFP4 tile GEMMs instead
     * of the GEMV's pieces: {@code -Dmoe4j.cuda.deviceTilePairs}, default {@link #DEVICE_TILE_PAIRS}, or
     * {@link #DEVICE_WGMMA_TILE_PAIRS} for the wgmma kernel's blocks of 16 pairs.
     */
    private final int deviceTilePairs;

    CudaExperts(ExpertWeights w, CudaEngine engine, CudaTuning tuning, DeviceMatrix w13, DeviceMatrix w2,
            DeviceBuffer bias13, DeviceBuffer bias2, DeviceQuant a13, DeviceQuant a2) {
        this.w = w;
        this.engine = engine;
        this.tuning = tuning;
        this.w13 = w13;
        this.w2 = w2;
        this.bias13 = bias13;
        this.bias2 = bias2;
        this.a13 = a13;
        this.a2 = a2;
        this.pool = new WorkspacePool(engine.context());
        this.overlapped = tuning.overlappedLaunches() && engine.context().device().computeCapability() >= 90
                && engine.context().driver().hasLaunchKernelEx();
        this.wgmmaTiles = tuning.wgmma() != null && engine.context().device().hasWgmma()
                && !(w13 instanceof Mxfp4Matrix m1 && m1.experts().specialScales())
                && !(w2 instanceof Mxfp4Matrix m2 && m2.experts().specialScales());
        boolean narrowBlocks = wgmmaTiles && tuning.wgmma().fewestTokens() <= 16;
        this.deviceTilePairs = Math.max(1, Integer.getInteger("moe4j.cuda.deviceTilePairs",
                narrowBlocks ? DEVICE_WGMMA_TILE_PAIRS : DEVICE_TILE_PAIRS));
    }

    @Override
    public String backend() {
        return CudaBackend.NAME;
    }

    /** The weights live on the device (uploaded by {@link CudaBackend#prepare}); of {@code w} only shapes are read. */
    @Override
    public boolean readsLoadedWeights() {
        return false;
    }

    /** The kernels of each GEMM, for logs and tests. */
    String kernels() {
        return "w13: " + w13.kernels() + "; w2: " + w2.kernels();
    }

    @Override
    public void forward(float[] x, int tokens, Routing routing, float[] out) {
        forward(x, tokens, routing, out, null);
    }

    /**
     * Device-side start and end of a call's work, between the copy in and the copy out (for benchmarks); with five
     * stage events, also the ends of prepare, GEMM1, activation, GEMM2 and combine (then no graph replay). With a
     * {@code lead}, the work it queues goes on the stream before the start event (a benchmark's busy wait): the GPU
     * is still busy with it while the host submits the kernels, so start..end is GPU time alone, without the
     * submission latency.
     */
    record Timing(CudaEvent start, CudaEvent end, List<CudaEvent> stages, Consumer<CudaStream> lead) {
        Timing(CudaEvent start, CudaEvent end, List<CudaEvent> stages) {
            this(start, end, stages, null);
        }
    }

    /**
     * Whether the MXFP4 tile GEMMs run on the wgmma kernel: on sm_90a unless the tuning turns it off, and not for
     * stacks with E8M0 0 or 255, whose exact per-block scaling only the mma.sync kernel has.
     */
    boolean wgmmaTiles() {
        return wgmmaTiles;
    }

    /**
     * Pairs per tile-GEMM block for this plan: the mma.sync kernel's tileTokens, or the wgmma kernel's width for the
     * experts' average group ({@link CudaTuning.WgmmaTile#blockPairs}).
     */
    int tileTokens(RoutePlan plan) {
        return wgmmaTiles ? tuning.wgmma().blockPairs(plan.pairs(), plan.groups()) : tuning.tileTokens();
    }

    /**
     * The MXFP4 GEMV's pieces (up to four pairs of one expert a block, {@link Mxfp4Gemv#forwardPieces}) when
     * they average at least the tuning's {@code gemvPiecePairs}, else none (one pair a block): pieces of about one
     * pair lose to single pairs (the block's larger x area and per-row preparation), fuller ones win (docs/cuda.md).
     */
    int[] gemvPieces(RoutePlan plan) {
        if (!(w13 instanceof Mxfp4Matrix) && !(w2 instanceof Mxfp4Matrix)) {
            return new int[0]; // only the MXFP4 GEMV takes pieces
        }
        int[] pieces = plan.pieces(Mxfp4Gemv.PAIRS_PER_PIECE);
        return plan.pairs() >= tuning.gemvPiecePairs() * (pieces.length / 4) ? pieces : new int[0];
    }

    /** Which path a call with this plan takes (exposed so tests can tell which kernels they exercised). */
    boolean usesTiles(RoutePlan plan) {
        return plan.groups() > 0 && (long) plan.pairs() >= (long) tuning.tileMinPairsPerExpert() * plan.groups()
                && (w13 instanceof Mxfp4Matrix || w2 instanceof Mxfp4Matrix);
    }

    void forward(float[] x, int tokens, Routing routing, float[] out, Timing timing) {
        int h = w.hidden();
        if (tokens < 0 || x.length < (long) tokens * h || out.length < (long) tokens * h) {
            throw new IllegalArgumentException("x and out must hold " + tokens + " x " + h + " values");
        }
        if (routing.tokens() != tokens) {
            throw new IllegalArgumentException("routing is for " + routing.tokens() + " tokens, not " + tokens);
        }
        RoutePlan plan = RoutePlan.of(routing, w);
        if (plan.pairs() == 0) {
            java.util.Arrays.fill(out, 0, tokens * h, 0f);
            return;
        }
        engine.context().makeCurrent();
        pool.call(ws -> {
            run(ws, x, null, tokens, plan, routing.weightOnInput(), out, null, timing);
            return null;
        });
    }

    /**
     * The forward call on device buffers: x [tokens, hidden] float32 is read from {@code x} and the output written to
     * {@code out} (both on this engine's device), so that a model resident on the device never moves its hidden
     * states through the host; only the routing plan goes over the bus. The caller's work that writes x must have
     * finished (this call runs on a stream of its own); the output is complete when this returns.
     */
    void forward(DeviceBuffer x, int tokens, Routing routing, DeviceBuffer out) {
        forward(x, tokens, routing, out, null);
    }

    /**
     * {@link #forward(DeviceBuffer, int, Routing, DeviceBuffer)} in the caller's workspace instead of one of this
     * layer's own (null: the layer's): a model's layers, which run one after another, then share one workspace, so
     * a long prompt grows one set of buffers instead of one a layer.
     */
    void forward(DeviceBuffer x, int tokens, Routing routing, DeviceBuffer out, Workspace shared) {
        long bytes = 4L * tokens * w.hidden();
        if (tokens < 0 || x.byteSize() < bytes || out.byteSize() < bytes) {
            throw new IllegalArgumentException("x and out must hold " + tokens + " x " + w.hidden() + " floats");
        }
        if (routing.tokens() != tokens) {
            throw new IllegalArgumentException("routing is for " + routing.tokens() + " tokens, not " + tokens);
        }
        RoutePlan plan = RoutePlan.of(routing, w);
        engine.context().makeCurrent();
        if (plan.pairs() == 0) {
            out.fillWords(0, 0, (long) tokens * w.hidden());
            return;
        }
        if (shared != null) {
            run(shared, null, x, tokens, plan, routing.weightOnInput(), null, out, null);
            return;
        }
        pool.call(ws -> {
            run(ws, null, x, tokens, plan, routing.weightOnInput(), null, out, null);
            return null;
        });
    }

    /**
     * Whether a plan built on the device ({@link #enqueuePlanned}) serves these experts: every one of the router's
     * experts held here (no expert parallelism), so that the plan needs no local-expert map.
     */
    boolean plansOnDevice(int routerExperts) {
        if (w.numExperts() != routerExperts) {
            return false;
        }
        for (int e = 0; e < routerExperts; e++) {
            if (w.localExpert(e) != e) {
                return false;
            }
        }
        return true;
    }

    /**
     * Where a plan built on the device lives in a {@link DeviceRoutes}: moe_route_plan's {@code meta} (pairToken,
     * pairExpert, pairWeight, tokenPair, tokenWeight and identity, {@code span} bytes apart, then the CUDA-core
     * GEMM's batches and the pieces) and {@code routes} (GEMM1's then GEMM2's). {@code maxBatches}: the batches' grid,
     * each of at most {@code batchSize} pairs of one expert (one a pair when 1); {@code maxPieces}: the pieces' grid
     * (0: none), each of at most {@code pieceSize} pairs of one expert; {@code tiles}: the pieces are the MXFP4 tile
     * GEMMs' M tiles, else the GEMV's; {@code direct1}: GEMM1 reads x's rows by token.
     */
    record DevicePlan(int pairs, long span, DeviceBuffer meta, DeviceBuffer routes, int batchSize, int maxBatches,
            int maxPieces, int pieceSize, boolean tiles, boolean direct1) {
        long pairToken() {
            return meta.pointer();
        }

        long pairExpert() {
            return meta.pointer() + span;
        }

        long pairWeight() {
            return meta.pointer() + 2 * span;
        }

        long tokenPair() {
            return meta.pointer() + 3 * span;
        }

        long tokenWeight() {
            return meta.pointer() + 4 * span;
        }

        long identity() {
            return meta.pointer() + 5 * span;
        }

        long batches() {
            return meta.pointer() + 6 * span;
        }

        long pieces() {
            return batches() + 16L * pairs;
        }
    }

    /** The {@link DevicePlan} of a pass of {@code tokens} x {@code topK} pairs, its buffers taken from routes. */
    DevicePlan devicePlan(int tokens, int topK, boolean weightOnInput, DeviceRoutes routes) {
        int pairs = tokens * topK;
        long span = (4L * pairs + 15) & ~15L;
        int experts = w.numExperts();
        int used = Math.min(experts, pairs);
        // The CUDA-core GEMM takes up to 8 pairs of an expert a block (its weights read once for them) once the
        // experts average two pairs, as a host plan does when an expert has more than one; else one a block.
        int batchSize = pairs >= 2L * experts ? unitsBatchSize(8) : 1;
        int maxBatches = mostPieces(pairs, experts, batchSize);
        boolean mxfp4 = w13 instanceof Mxfp4Matrix || w2 instanceof Mxfp4Matrix;
        if (tokens > 1 && mxfp4 && (long) pairs >= (long) deviceTilePairs * experts) {
            // The tile GEMMs (each expert's weights read once for all its pairs) once the experts average
            // deviceTilePairs pairs. Their M tiles are pieces of tileTokens pairs, as many as the grid can need:
            // each routed expert's count rounded up to whole tiles.
            int tileTokens = deviceTileTokens(pairs, used);
            int maxTiles = mostPieces(pairs, experts, tileTokens);
            return newDevicePlan(routes, pairs, span, batchSize, maxBatches, maxTiles, tileTokens, true, false);
        }
        boolean direct1 = a13.none() && !weightOnInput && w13.columnOrder() == null;
        // The GEMV's pieces (up to four pairs of one expert a block) once the pairs are as many as the experts: an
        // expert then takes one or two pairs on average, and the pieces read each routed expert once instead of once
        // a pair (H200, gpt-oss-20b shapes, 24 layers, a batch-8 step, 32 pairs on 32 experts, the old rule against
        // this one alternated twice in one call: 5.58-5.62 ms a step with a pair a block, 5.22-5.31 with pieces).
        // Their count varies with the routing, so the grid is the most there can be and the plan pads with empty
        // pieces. One token's choices are distinct experts, a pair each: no pieces (and the selection writes that
        // plan itself).
        boolean pieces = tokens > 1 && pairs >= experts && mxfp4;
        int size = Mxfp4Gemv.PAIRS_PER_PIECE;
        int maxPieces = pieces ? mostPieces(pairs, experts, size) : 0;
        return newDevicePlan(routes, pairs, span, batchSize, maxBatches, maxPieces, size, false, direct1);
    }

    /**
     * The most pieces of at most {@code size} pairs of one expert that {@code pairs} pairs over {@code experts}
     * experts can make: each routed expert's count rounded up, so at most (pairs + (size - 1) used) / size for the
     * used = min(experts, pairs) experts that can have pairs (one more size - 1 kept as a margin), and never more than
     * the pairs. A device-built plan's grids take this many and pad with empty pieces.
     */
    static int mostPieces(int pairs, int experts, int size) {
        long used = Math.min(experts, pairs);
        return (int) Math.min(pairs, (pairs + (size - 1L) * (used + 1)) / size);
    }

    private static DevicePlan newDevicePlan(DeviceRoutes routes, int pairs, long span, int batchSize, int maxBatches,
            int maxPieces, int pieceSize, boolean tiles, boolean direct1) {
        DeviceBuffer meta = routes.buffer(DeviceRoutes.Slot.META,
                6 * span + 16L * pairs + 16L * Math.max(maxPieces, 1));
        DeviceBuffer droutes = routes.buffer(DeviceRoutes.Slot.ROUTES, 16L * pairs);
        return new DevicePlan(pairs, span, meta, droutes, batchSize, maxBatches, maxPieces, pieceSize, tiles,
                direct1);
    }

    /**
     * The CUDA-core GEMM's batch size for up to {@code wanted} pairs, the smaller of the two matrices' where they are
     * units; 1 when neither is (the MXFP4 kernels do not read the batches).
     */
    private int unitsBatchSize(int wanted) {
        int tb = Integer.MAX_VALUE;
        for (DeviceMatrix m : new DeviceMatrix[] {w13, w2}) {
            if (m instanceof UnitMatrix u) {
                tb = Math.min(tb, u.batchSize(engine, tuning, wanted));
            }
        }
        return tb == Integer.MAX_VALUE ? 1 : tb;
    }

    /**
     * Warps of moe_route_plan's one block: 8 for a decode batch's pairs (as its recorded steps were measured), 32
     * beyond 2048 pairs (a prompt's pass: each warp walks P / W pairs), fewer where the experts' W next-slot rows
     * would pass 48 KB of shared memory with the four [E] arrays.
     */
    static int planWarps(int pairs, int experts) {
        int fit = 12288 / Math.max(1, experts) - 4;
        return Math.max(1, Math.min(pairs > 2048 ? 32 : 8, fit));
    }

    /**
     * The default of {@link #deviceTilePairs}. The host-planned layer on the H200 (gpt-oss-20b shapes,
     * CudaExpertsBench, docs/cuda.md) put tiles behind pieces at 4 pairs an expert (383 against 275 µs) and ahead
     * from 8 (411 against 447; 128 pairs an expert 384 against 718).
     */
    static final int DEVICE_TILE_PAIRS = 8;

    /**
     * {@link #deviceTilePairs}' default where the wgmma kernel takes blocks of 16 pairs: a batch-32 decode step of
     * gpt-oss-20b shapes (4 pairs an expert) on the H200 took 7.61-7.62 ms against 7.95-8.00 with the pieces (at 8,
     * batch 64, the tiles had led already); batches of 16 and 24 (2 and 3 an expert) keep the pieces.
     */
    static final int DEVICE_WGMMA_TILE_PAIRS = 4;

    /**
     * Pairs an M tile of a device-built plan: {@link #tileTokens(RoutePlan)}'s rule, with every expert the pairs can
     * reach counted as used, since the plan is not known here.
     */
    private int deviceTileTokens(int pairs, int used) {
        return wgmmaTiles ? tuning.wgmma().blockPairs(pairs, used) : tuning.tileTokens();
    }

    /**
     * The forward call with its routing already on the device: the choices {@code routes} holds (moe_router_select's
     * ids and weights, [tokens, topK]) become the routing plan in moe_route_plan, then the experts' kernels run, all
     * enqueued on the caller's {@code stream} with no host copy or wait, so that a model's decode step records as
     * one graph. The plan is the host's ({@link RoutePlan}: pairs grouped by expert, stable in token order), with
     * grids that do not depend on it: the CUDA-core GEMM's batches (up to 8 pairs of an expert once they average two,
     * else one), padded with empty ones; for MXFP4, one pair a GEMV block or, from one
     * pair an expert on average (more than one token), the GEMV's pieces, and from {@link #deviceTilePairs} pairs an
     * expert the tile GEMMs' M tiles, either padded to their most with empty ones. x
     * and out [tokens, hidden] float32. The caller checked {@link #plansOnDevice}. {@code early}: bits
     * ({@link #EARLY_PLAN}, ...) of the plan, activation and combine that let the next kernel launch at their entry
     * (allow_next_grid_if in moe4j_common.cuh). {@code written}: the {@link #devicePlan} the selection already wrote
     * (one token), so that no plan kernel runs; null: the plan kernel makes it.
     */
    void enqueuePlanned(DeviceBuffer x, int tokens, int topK, boolean weightOnInput, DeviceBuffer out,
            DeviceRoutes routes, CudaStream stream, int early, DevicePlan written) {
        int h = w.hidden();
        DevicePlan plan = written != null ? written : devicePlan(tokens, topK, weightOnInput, routes);
        int pairs = plan.pairs();
        DeviceBuffer ids = routes.buffer(DeviceRoutes.Slot.IDS, 4L * pairs);
        DeviceBuffer weights = routes.buffer(DeviceRoutes.Slot.WEIGHTS, 4L * pairs);
        boolean tile1 = plan.tiles() && w13 instanceof Mxfp4Matrix;
        boolean tile2 = plan.tiles() && w2 instanceof Mxfp4Matrix;
        // A tile GEMM reads f16 rows of whole block pairs with an exponent a row, as the host-planned call's.
        int pitch1 = tile1 ? 64 * ((Mxfp4Matrix) w13).blockPairs() : h;
        int pitch2 = tile2 ? 64 * ((Mxfp4Matrix) w2).blockPairs() : w.intermediate();
        DeviceBuffer in1 = plan.direct1() ? x
                : routes.buffer(DeviceRoutes.Slot.IN1, (long) pairs * pitch1 * (tile1 ? 2 : 4));
        DeviceBuffer exp1 = tile1 ? routes.buffer(DeviceRoutes.Slot.EXP1, 4L * pairs) : null;
        DeviceBuffer hbuf = routes.buffer(DeviceRoutes.Slot.H, 4L * pairs * w.w13().rows());
        DeviceBuffer act = routes.buffer(DeviceRoutes.Slot.ACT, (long) pairs * pitch2 * (tile2 ? 2 : 4));
        DeviceBuffer exp2 = tile2 ? routes.buffer(DeviceRoutes.Slot.EXP2, 4L * pairs) : null;
        DeviceBuffer y = routes.buffer(DeviceRoutes.Slot.Y, 4L * pairs * h);
        if (written == null) {
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = new KernelArgs(arena).pointer(ids).pointer(weights).i32(tokens).i32(topK)
                        .i32(w.numExperts()).pointer(plan.pairToken()).pointer(plan.pairExpert())
                        .pointer(plan.pairWeight()).pointer(plan.tokenPair()).pointer(plan.tokenWeight())
                        .pointer(plan.identity()).pointer(plan.batches()).pointer(plan.routes())
                        .i32(plan.direct1() ? 1 : 0).i32(plan.batchSize()).i32(plan.maxBatches())
                        .pointer(plan.pieces()).i32(plan.maxPieces()).i32(plan.pieceSize())
                        .i32((early & EARLY_PLAN) != 0 ? 1 : 0);
                int warps = planWarps(pairs, w.numExperts());
                engine.kernels().get("router.cu", "moe_route_plan", List.of()).function()
                        .launch(1, 1, 1, 32 * warps, 1, 1, 4 * (4 + warps) * w.numExperts(), stream, args);
            }
        } else if (tokens != 1 || plan.maxPieces() != 0 || plan.batchSize() != 1) {
            throw new IllegalStateException("the selection writes the plan of one token's pass without GEMV pieces"
                    + ", not of " + tokens + " tokens (" + plan.maxPieces() + " pieces)");
        }
        boolean tiles = plan.tiles();
        Launch launch = new Launch(null, tokens, pairs, topK, weightOnInput, plan.direct1(), tile1, tile2, x, in1,
                exp1, pitch1, hbuf, act, exp2, pitch2, y, out, plan.routes(), plan.meta(), plan.pairToken(),
                plan.pairExpert(), plan.pairWeight(), plan.tokenPair(), plan.tokenWeight(), plan.identity(),
                plan.batches(), plan.maxBatches(), plan.batchSize(), plan.batches(), plan.maxBatches(),
                plan.batchSize(), tiles ? plan.pieces() : 0L,
                tiles ? plan.maxPieces() : 0, tiles ? plan.pieceSize() : tuning.tileTokens(),
                tiles ? 0L : plan.pieces(), tiles ? 0 : plan.maxPieces(), early);
        enqueue(launch, stream, null);
    }

    /** The buffers moe_router_select writes for {@link #enqueuePlanned}: ids, then weights. */
    static DeviceBuffer[] choices(DeviceRoutes routes, int tokens, int topK) {
        return new DeviceBuffer[] {routes.buffer(DeviceRoutes.Slot.IDS, 4L * tokens * topK),
                routes.buffer(DeviceRoutes.Slot.WEIGHTS, 4L * tokens * topK)};
    }

    /** Int arrays packed one after another (16-byte aligned) into one upload. */
    private static final class Meta {
        private final List<int[]> arrays = new ArrayList<>();
        private long bytes;

        long add(int[] a) {
            long at = bytes;
            arrays.add(a);
            bytes += (4L * a.length + 15) & ~15L;
            return at;
        }

        long bytes() {
            return Math.max(bytes, 16);
        }

        void write(MemorySegment into) {
            long at = 0;
            for (int[] a : arrays) {
                MemorySegment.copy(a, 0, into, JAVA_INT, at, a.length);
                at += (4L * a.length + 15) & ~15L;
            }
        }
    }

    /** One call: x and out are host arrays, or (when {@code deviceX} is given) device buffers. */
    private void run(Workspace ws, float[] x, DeviceBuffer deviceX, int tokens, RoutePlan plan, boolean weightOnInput,
            float[] out, DeviceBuffer deviceOut, Timing timing) {
        int h = w.hidden();
        int pairs = plan.pairs();
        boolean tiles = usesTiles(plan);
        boolean tile1 = tiles && w13 instanceof Mxfp4Matrix;
        boolean tile2 = tiles && w2 instanceof Mxfp4Matrix;
        // GEMM1 may read the tokens directly only as float32 rows in checkpoint order, unchanged.
        boolean direct1 = !tile1 && a13.none() && !weightOnInput && w13.columnOrder() == null;

        Meta meta = new Meta();
        long offToken = meta.add(plan.pairToken());
        long offExpert = meta.add(plan.pairExpert());
        int[] weightBits = new int[pairs];
        for (int p = 0; p < pairs; p++) {
            weightBits[p] = Float.floatToRawIntBits(plan.pairWeight()[p]);
        }
        long offWeight = meta.add(weightBits);
        long offTokenPair = meta.add(plan.tokenPair());
        long offTokenWeight = meta.add(floatBits(plan, tokens));
        long offIdentity = meta.add(plan.identityRows());
        int tb1 = w13 instanceof UnitMatrix u ? u.batchSize(engine, tuning, plan.largestGroup() > 1 ? 8 : 1) : 1;
        int tb2 = w2 instanceof UnitMatrix u ? u.batchSize(engine, tuning, plan.largestGroup() > 1 ? 8 : 1) : 1;
        int[] batches1 = plan.pieces(tb1);
        int[] batches2 = plan.pieces(tb2);
        long offBatches1 = meta.add(batches1);
        long offBatches2 = meta.add(batches2);
        int[] gemvPieces = tiles ? new int[0] : gemvPieces(plan); // with tiles no MXFP4 matrix is on the GEMV
        long offPieces = meta.add(gemvPieces);
        int tileTokens = tiles ? tileTokens(plan) : tuning.tileTokens();
        int[] mtiles = plan.pieces(tileTokens);
        long offTiles = meta.add(mtiles);
        int[] routes = new int[4 * pairs];
        System.arraycopy(plan.routes(direct1), 0, routes, 0, 2 * pairs);
        System.arraycopy(plan.routes(false), 0, routes, 2 * pairs, 2 * pairs);

        long xBytes = 4L * tokens * h;
        long xPadded = (xBytes + 15) & ~15L; // the staged spans stay 16-byte aligned (float4 rows, int4 metadata)
        long outBytes = xBytes;
        long metaBytes = meta.bytes();
        long routeBytes = 4L * routes.length;
        long inBytes = xPadded + metaBytes + routeBytes;
        MemorySegment staging = ws.pinned(inBytes + outBytes);
        if (deviceX == null) {
            HostCopy.toSegment(x, staging, tokens * h);
        }
        meta.write(staging.asSlice(xPadded, metaBytes));
        MemorySegment.copy(routes, 0, staging, JAVA_INT, xPadded + metaBytes, routes.length);
        MemorySegment outHost = staging.asSlice(inBytes, outBytes);

        boolean stages = timing != null && !timing.stages().isEmpty();
        boolean graphed = pairs <= GRAPH_MAX_PAIRS && !stages;
        // Small batches move their inputs and output through the bus from the kernels themselves (mapped pinned
        // memory): copy-engine transfers each took a few microseconds to start, longer than the bytes take.
        boolean mapped = graphed && tuning.mappedTransfers();
        CudaStream stream = ws.stream();
        // On device buffers the kernels read the caller's x and write the caller's out: no copies on the device.
        DeviceBuffer dx = deviceX != null ? deviceX : ws.buffer(Slot.X, xPadded);
        DeviceBuffer dmeta = ws.buffer(Slot.META, metaBytes);
        DeviceBuffer droutes = ws.buffer(Slot.ROUTES, routeBytes);
        if (!mapped) {
            if (deviceX == null) {
                dx.copyFromAsync(staging.asSlice(0, xBytes), 0, stream);
            }
            dmeta.copyFromAsync(staging.asSlice(xPadded, metaBytes), 0, stream);
            droutes.copyFromAsync(staging.asSlice(xPadded + metaBytes, routeBytes), 0, stream);
        }
        long m = dmeta.pointer();
        int pitch1 = tile1 ? 64 * ((Mxfp4Matrix) w13).blockPairs() : h;
        int pitch2 = tile2 ? 64 * ((Mxfp4Matrix) w2).blockPairs() : w.intermediate();
        DeviceBuffer in1 = direct1 ? dx : ws.buffer(Slot.IN1, (long) pairs * pitch1 * (tile1 ? 2 : 4));
        DeviceBuffer exp1 = tile1 ? ws.buffer(Slot.EXP1, 4L * pairs) : null;
        DeviceBuffer hbuf = ws.buffer(Slot.H, 4L * pairs * w.w13().rows());
        DeviceBuffer act = ws.buffer(Slot.ACT, (long) pairs * pitch2 * (tile2 ? 2 : 4));
        DeviceBuffer exp2 = tile2 ? ws.buffer(Slot.EXP2, 4L * pairs) : null;
        DeviceBuffer y = ws.buffer(Slot.Y, 4L * pairs * h);
        DeviceBuffer dout = deviceOut != null ? deviceOut : ws.buffer(Slot.OUT, outBytes);
        // On device buffers only the plan comes through the bus (moe_copy_in with no x words), and the combine
        // writes the caller's out.
        Transfers transfers = !mapped ? null : deviceX == null
                ? new Transfers(staging.address(), (int) (xPadded / 4), (int) (metaBytes / 4), (int) (routeBytes / 4),
                        outHost.address())
                : new Transfers(staging.address() + xPadded, 0, (int) (metaBytes / 4), (int) (routeBytes / 4),
                        deviceOut.pointer());
        Launch launch = new Launch(transfers, tokens, pairs, plan.topK(), weightOnInput, direct1, tile1, tile2, dx, in1,
                exp1, pitch1, hbuf, act, exp2, pitch2, y, dout, droutes, dmeta, m + offToken, m + offExpert,
                m + offWeight, m + offTokenPair, m + offTokenWeight, m + offIdentity, m + offBatches1,
                batches1.length / 4, tb1, m + offBatches2, batches2.length / 4, tb2, m + offTiles, mtiles.length / 4,
                tileTokens, m + offPieces, gemvPieces.length / 4, 0);

        if (timing != null) {
            if (timing.lead() != null) {
                timing.lead().accept(stream);
            }
            timing.start().record(stream);
        }
        if (graphed) {
            // Small batches are launch-bound: the same launch sequence (same shapes and buffers) is recorded once
            // into a graph and replayed, one launch instead of five. Only the data the sequence reads changes.
            Workspace.Replay replay = ws.replay(this, launch);
            if (replay.graph() != null) {
                replay.graph().launch(stream);
            } else if (replay.seenBefore()) {
                ws.keep(this, launch, stream.capture(() -> enqueue(launch, stream, null), overlapped));
                ws.replay(this, launch).graph().launch(stream);
            } else {
                enqueue(launch, stream, null);
            }
        } else {
            enqueue(launch, stream, stages ? timing.stages() : null);
        }
        if (timing != null) {
            timing.end().record(stream);
        }
        if (deviceOut != null) {
            stream.synchronize();
            return;
        }
        if (!mapped) {
            dout.copyToAsync(outHost, 0, stream);
        }
        stream.synchronize();
        HostCopy.fromSegment(outHost, out, tokens * h);
    }

    /** Batches of at most this many routed pairs replay their kernels from a graph. */
    static final int GRAPH_MAX_PAIRS = 256;

    /**
     * A small batch's transfers through mapped pinned memory: the staged inputs at {@code hostIn} (x padded to 16
     * bytes, the plan's arrays, the routes; lengths in 32-bit words) and the output at {@code hostOut}.
     */
    record Transfers(long hostIn, int xWords, int metaWords, int routeWords, long hostOut) {
    }

    /**
     * Everything one call's kernels read: shapes, paths and device addresses. Two calls with equal launches
     * enqueue identical kernels, which is what makes a recorded graph replayable.
     */
    record Launch(Transfers transfers, int tokens, int pairs, int topK, boolean weightOnInput, boolean direct1,
            boolean tile1, boolean tile2, DeviceBuffer x, DeviceBuffer in1, DeviceBuffer exp1, int pitch1,
            DeviceBuffer h, DeviceBuffer act, DeviceBuffer exp2, int pitch2, DeviceBuffer y, DeviceBuffer out,
            DeviceBuffer routes, DeviceBuffer meta, long pairToken, long pairExpert, long pairWeight, long tokenPair,
            long tokenWeight, long identity, long batches1, int batchCount1, int tb1, long batches2, int batchCount2,
            int tb2, long mtiles, int mtileCount, int tileTokens, long pieces, int pieceCount, int early) {
    }

    /** Bits of {@link #enqueuePlanned}'s {@code early}: which of its short kernels let the next one launch early. */
    static final int EARLY_PLAN = 1, EARLY_ACTIVATE = 2, EARLY_COMBINE = 4;

    /** Enqueues the call's kernels; records an event after each of the five stages when {@code stages} is given. */
    private void enqueue(Launch l, CudaStream stream, List<CudaEvent> stages) {
        int h = w.hidden();
        int inter = w.intermediate();
        int rows13 = w.w13().rows();
        Transfers mapped = l.transfers();
        if (mapped != null) {
            int words = mapped.xWords() + mapped.metaWords() + mapped.routeWords();
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = new KernelArgs(arena).pointer(mapped.hostIn()).pointer(l.x())
                        .i32(mapped.xWords()).pointer(l.meta()).i32(mapped.metaWords()).pointer(l.routes())
                        .i32(mapped.routeWords());
                int blocks = Math.min(COPY_IN_BLOCKS, Math.ceilDiv(words, ROW_THREADS));
                rows("moe_copy_in").function().launch(blocks, 1, 1, ROW_THREADS, 1, 1, 0, stream, args);
            }
        }
        if (!l.direct1()) {
            KernelCache.Kernel k = rows("moe_prepare_rows");
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = new KernelArgs(arena).pointer(l.x()).i32(h).pointer(l.pairToken())
                        .pointer(l.pairExpert()).pointer(l.pairWeight()).i32(l.weightOnInput() ? 1 : 0);
                a13.append(args);
                rowOutput(args.pointer(pointerOf(w13.columnOrder())), l.tile1(), l.in1(), l.exp1(), l.pitch1());
                launchRows(k, l.pairs(), h, stream, args);
            }
        }
        stage(stages, 0, stream);
        // GEMM1's routes were written before the row stage when there is one (two kernels back), else just before.
        gemm(w13, l.tile1(), l.in1(), l.exp1(), l.direct1() ? l.pairToken() : l.identity(), l.batches1(),
                l.batchCount1(), l.tb1(), l.routes(), 0, !l.direct1(), l.mtiles(), l.mtileCount(), l.tileTokens(),
                l.pieces(), l.pieceCount(), l.pairs(), l.h(), stream);
        stage(stages, 1, stream);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(l.h()).pointer(l.pairExpert()).pointer(pointerOf(bias13))
                    .i32(rows13).i32(inter).i32(gateMode(w.gateLayout())).i32(activationCode(w.activation()))
                    .f32(w.swigluLimit()).f32(io.moe4j.activation.Activation.OAI_ALPHA);
            if (a2.none() && !l.tile2() && w2.columnOrder() == null) {
                args.pointer(l.act()).i32((l.early() & EARLY_ACTIVATE) != 0 ? 1 : 0);
                rows("moe_activate_elements").function().launch(l.pairs(), Math.ceilDiv(inter, ROW_THREADS), 1,
                        ROW_THREADS, 1, 1, 0, stream, args);
            } else {
                a2.append(args);
                rowOutput(args.pointer(pointerOf(w2.columnOrder())), l.tile2(), l.act(), l.exp2(), l.pitch2());
                launchRows(rows("moe_activate_rows"), l.pairs(), inter, stream, args);
            }
        }
        stage(stages, 2, stream);
        // GEMM2's routes were written by moe_copy_in (or a copy) at least two kernels earlier.
        gemm(w2, l.tile2(), l.act(), l.exp2(), l.identity(), l.batches2(), l.batchCount2(), l.tb2(), l.routes(),
                l.pairs(), true, l.mtiles(), l.mtileCount(), l.tileTokens(), l.pieces(), l.pieceCount(), l.pairs(),
                l.y(), stream);
        stage(stages, 3, stream);
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(l.y()).i32(h).pointer(l.tokenPair())
                    .pointer(l.tokenWeight()).i32(l.topK()).pointer(l.pairExpert()).pointer(pointerOf(bias2))
                    .i32(l.weightOnInput() ? 1 : 0).pointer(mapped != null ? mapped.hostOut() : l.out().pointer())
                    .i32((l.early() & EARLY_COMBINE) != 0 ? 1 : 0);
            int columnsPerThread = h % 4 == 0 ? 4 : 1; // as moe_combine picks
            rows("moe_combine").function().launch(l.tokens(), Math.ceilDiv(h, columnsPerThread * ROW_THREADS), 1,
                    ROW_THREADS, 1, 1, 0, stream, args);
        }
        stage(stages, 4, stream);
    }

    private static void stage(List<CudaEvent> stages, int i, CudaStream stream) {
        if (stages != null) {
            stages.get(i).record(stream);
        }
    }

    private static int[] floatBits(RoutePlan plan, int tokens) {
        // The router weight of each (token, choice), for the combine; choices of non-local experts are skipped there.
        int[] bits = new int[plan.tokenPair().length];
        for (int i = 0; i < bits.length; i++) {
            int p = plan.tokenPair()[i];
            bits[i] = p < 0 ? 0 : Float.floatToRawIntBits(plan.pairWeight()[p]);
        }
        return bits;
    }

    /** outMode, outF, outH, outExp, outPitch of the row kernels. */
    private static void rowOutput(KernelArgs args, boolean f16, DeviceBuffer rows, DeviceBuffer exps, int pitch) {
        args.i32(f16 ? 1 : 0).pointer(f16 ? 0L : rows.pointer()).pointer(f16 ? rows.pointer() : 0L)
                .pointer(exps == null ? 0L : exps.pointer()).i32(pitch);
    }

    private KernelCache.Kernel rows(String name) {
        return engine.kernels().get("moe_rows.cu", name, List.of());
    }

    private void launchRows(KernelCache.Kernel k, int pairs, int rowLength, CudaStream stream, KernelArgs args) {
        int shared = 4 * (rowLength + 32);
        if (shared > k.sharedLimit()) {
            throw new IllegalArgumentException("rows of " + rowLength + " values need " + shared
                    + " bytes of shared memory; this device allows " + k.sharedLimit());
        }
        k.function().launch(pairs, 1, 1, rowThreads(k, pairs), 1, 1, shared, stream, args);
    }

    /**
     * Threads of a row-stage block: {@link #ROW_THREADS} when the rows fill the GPU; when they leave SMs idle (decode:
     * one block per routed pair), up to 1024, so that each thread's serial share of the row (float64 activation and
     * quantizer arithmetic) shrinks. The kernel's register budget caps it; the kernels take any multiple of 32.
     */
    private int rowThreads(KernelCache.Kernel k, int pairs) {
        return rowThreads(k, pairs, engine.context().device().multiprocessors());
    }

    /** {@link #rowThreads(KernelCache.Kernel, int)} for a device of {@code multiprocessors}. */
    static int rowThreads(KernelCache.Kernel k, int rows, int multiprocessors) {
        if (rows >= multiprocessors) {
            return ROW_THREADS;
        }
        int limit = k.function().attribute(CudaDriver.FUNC_MAX_THREADS_PER_BLOCK) / 32 * 32;
        return Math.max(ROW_THREADS, Math.min(1024, limit));
    }

    /**
     * One grouped GEMM of the call on the path its matrix and the plan pick. {@code routesReady}: the routes were
     * written at least two kernels before this one, so the tensor-core GEMV may read them before its overlapped
     * launch's wait (see {@link Mxfp4Gemv#forward}).
     */
    private void gemm(DeviceMatrix matrix, boolean tile, DeviceBuffer in, DeviceBuffer exps, long xRows, long batches,
            int batchCount, int tb, DeviceBuffer routes, long firstRoute, boolean routesReady, long mtiles,
            int mtileCount, int tileTokens, long pieces, int pieceCount, int pairs, DeviceBuffer out,
            CudaStream stream) {
        switch (matrix) {
            case Mxfp4Matrix mx when tile && wgmmaTiles -> {
                CudaTuning.WgmmaTile wt = tuning.wgmma();
                KernelCache.Kernel k = engine.kernels().get("gemm_mxfp4_wgmma.cu", "moe_gemm_mxfp4_wgmma",
                        wt.defines(tileTokens));
                int shared = wt.sharedBytes(tileTokens);
                if (shared > k.sharedLimit()) {
                    throw new IllegalArgumentException("wgmma tile " + wt.name() + " needs " + shared
                            + " bytes of shared memory; this device allows " + k.sharedLimit());
                }
                launchTiles(k, mx, wt.rowTiles(), wt.warps(), shared, in, exps, mtiles, mtileCount, out, stream);
            }
            case Mxfp4Matrix mx when tile -> {
                List<String> defines = new ArrayList<>(tuning.tileDefines());
                if (mx.experts().specialScales()) {
                    // E8M0 0 or 255 (NaN): scale each block's product exactly instead of pre-scaling in f16
                    defines.add("-DMOE4J_EXACT_E8M0=1");
                    defines.add("-DTILE_PRESCALE=0");
                }
                KernelCache.Kernel k = engine.kernels().get("gemm_mxfp4_tile.cu", "moe_gemm_mxfp4_tile", defines);
                launchTiles(k, mx, tuning.tileRowTilesPerBlock(), tuning.tileWarps(), 0, in, exps, mtiles, mtileCount,
                        out, stream);
            }
            case Mxfp4Matrix mx when pieceCount > 0 && engine.mxfp4().piecesFit(mx.experts()) ->
                    engine.mxfp4().forwardPieces(mx.experts(), in, routes, firstRoute, pairs, pieces, pieceCount, out,
                            routesReady, stream);
            case Mxfp4Matrix mx -> engine.mxfp4().forward(mx.experts(), in, routes, firstRoute, pairs, out,
                    routesReady, stream);
            case UnitMatrix u -> {
                UnitMatrix.Product product = u.product(engine, tuning, tb);
                for (int first = 0; first < batchCount; first += MAX_GRID_Y) {
                    int count = Math.min(MAX_GRID_Y, batchCount - first);
                    try (Arena arena = Arena.ofConfined()) {
                        KernelArgs args = u.gemmArgs(new KernelArgs(arena), in.pointer(), batches + 16L * first,
                                xRows, out.pointer())
                                .i32(u.rows()).pointer(0L).i32(0).i32(0); // outPitch, no bias, overwrite, batches given
                        // the GEMV's batches sit beside the routes: ready when the routes are
                        product.launch(u.rows(), count, args, routesReady, stream);
                    }
                }
            }
        }
    }

    /**
     * A tile GEMM (either kernel, same arguments): grid x over row groups of {@code rowTiles} 16-row tiles, y over
     * the M tiles, in launches of at most {@link #MAX_GRID_Y} M tiles.
     */
    private static void launchTiles(KernelCache.Kernel k, Mxfp4Matrix mx, int rowTiles, int warps, int shared,
            DeviceBuffer in, DeviceBuffer exps, long mtiles, int mtileCount, DeviceBuffer out, CudaStream stream) {
        for (int first = 0; first < mtileCount; first += MAX_GRID_Y) {
            int count = Math.min(MAX_GRID_Y, mtileCount - first);
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = new KernelArgs(arena).pointer(mx.experts().codes()).pointer(mx.experts().scales())
                        .pointer(in).pointer(exps).pointer(mtiles + 16L * first).pointer(out).i32(mx.rows())
                        .i32(mx.rowTiles()).i32(mx.blockPairs()).pointer(mx.rowExponents());
                k.function().launch(Math.ceilDiv(mx.rowTiles(), rowTiles), count, 1, 32 * warps, 1, 1, shared, stream,
                        args);
            }
        }
    }

    /** A buffer's device address, or 0 (a kernel's null pointer) for none. */
    static long pointerOf(DeviceBuffer b) {
        return b == null ? 0L : b.pointer();
    }

    /** gateMode of moe_activate_rows. */
    static int gateMode(GateLayout layout) {
        return switch (layout) {
            case NONE -> 0;
            case CONCATENATED -> 1;
            case INTERLEAVED -> 2;
        };
    }

    /** ACT_* of moe4j_quant.cuh. */
    static int activationCode(io.moe4j.activation.Activation a) {
        return switch (a) {
            case SILU_AND_MUL -> 0;
            case SWIGLU_OAI -> 1;
            case GELU_AND_MUL -> 2;
            case GELU_TANH_AND_MUL -> 3;
            case RELU2_AND_MUL -> 4;
            case SILU -> 5;
            case GELU -> 6;
            case GELU_TANH -> 7;
            case RELU2 -> 8;
        };
    }

    @Override
    public void close() {
        engine.context().makeCurrent();
        pool.close();
        w13.close();
        w2.close();
        for (AutoCloseable c : new AutoCloseable[] {bias13, bias2, a13, a2}) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }
    }
}
