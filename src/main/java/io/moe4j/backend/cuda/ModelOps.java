package io.moe4j.backend.cuda;

import io.moe4j.MoeException;
import io.moe4j.backend.Experts;
import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaFunction;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import io.moe4j.routing.RouterSpec;
import io.moe4j.routing.Routing;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * The decoder's ops on the device for a model resident there ({@code model_ops.cu}), on one stream of the
 * process's CUDA engine, and the door to a layer's experts with device buffers. Arguments are device addresses
 * (a buffer's pointer plus a byte offset) so that callers can address rows inside larger buffers; 0 stands for an
 * absent optional input (bias, norm weight, sinks). Not thread-safe: one user at a time (each sequence of a model on
 * the device opens its own).
 */
public final class ModelOps implements AutoCloseable {
    private static final String SOURCE = "model_ops.cu";
    private static final int THREADS = 256;
    /** Warps per block of the linear and router kernels (one output row a warp). */
    private static final int WARPS = THREADS / 32;
    /** The widest head the device attention takes (HEAD_DIM_MAX in the source). */
    public static final int HEAD_DIM_MAX = 256;
    private static final int ATTEND_THREADS = 512; // ATTEND_WARPS in the source
    private static final int ROUTER_THREADS = 128; // ROUTER_THREADS in the source
    private static final int ARGMAX_THREADS = 1024; // ARGMAX_THREADS in the source
    private static final int SAMPLE_THREADS = 256; // SAMPLE_THREADS in the source

    private final CudaEngine engine;
    private final CudaStream stream;
    /** Pinned host memory the reads land in (a pageable copy of a step's logits took ~0.6 ms), grown on demand. */
    private io.moe4j.backend.cuda.driver.PinnedBuffer landing;
    /** Pinned host memory a pass's tables leave from ({@link #staging}, {@link #send}), grown on demand. */
    private io.moe4j.backend.cuda.driver.PinnedBuffer sending;

    /**
     * Whether recorded steps launch their kernels overlapped (programmatic dependent launch: each kernel of
     * model_ops.cu waits for the one before at its top), on sm_90+ with a driver that has cuLaunchKernelEx.
     */
    private final boolean overlapped;
    /**
     * Where {@link #experts} runs every layer's experts (layers run one after another on this stream): one set of
     * buffers grown to the largest pass, not one a layer. Made on first use.
     */
    private Workspace expertsWorkspace;
    /** The rows' meeting places of {@link #sampleRows} (zeroed once; grown on demand). */
    private DeviceBuffer sampleGrids;
    /** Blocks of {@link #sampleRows}' kernel that the device holds at once (0 until first asked). */
    private int sampleResident;

    /** The CUDA-core GEMM's shape for linears in formats other than bf16 (as the experts take it). */
    private final CudaTuning tuning = CudaTuning.fromSystemProperties();

    private ModelOps(CudaEngine engine) {
        this.engine = engine;
        this.stream = engine.context().createStream();
        this.overlapped = CudaTuning.fromSystemProperties().overlappedLaunches()
                && engine.context().device().computeCapability() >= 90 && engine.context().driver().hasLaunchKernelEx();
    }

    /** The device's name as the driver reports it, e.g. {@code NVIDIA H100 80GB HBM3}. */
    public String deviceName() {
        return engine.context().device().name();
    }

    /** The ops on device 0; fails with the probe's reason when this machine has no usable CUDA device. */
    public static ModelOps open() {
        return open(0);
    }

    /**
     * The ops on device {@code ordinal}, its context made current on this thread; fails with the probe's reason when
     * this machine has no usable CUDA device, and naming the device count when it has no such device.
     */
    public static ModelOps open(int ordinal) {
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
            throw new MoeException("unsupported on cuda: no usable CUDA device (" + probe.reason() + ")");
        }
        return new ModelOps(CudaEngine.forDevice(ordinal));
    }

    /** The CUDA ordinal of the device these ops run on. */
    public int deviceOrdinal() {
        return engine.context().device().ordinal();
    }

    public CudaContext context() {
        return engine.context();
    }

    public CudaStream stream() {
        return stream;
    }

    public DeviceBuffer allocate(long bytes) {
        engine.context().makeCurrent();
        return engine.context().allocate(Math.max(bytes, 16));
    }

    /** A device copy of host memory (an mmap'd tensor, for instance). */
    public DeviceBuffer upload(MemorySegment bytes) {
        DeviceBuffer b = allocate(bytes.byteSize());
        b.copyFrom(bytes);
        return b;
    }

    public DeviceBuffer upload(float[] values) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(ValueLayout.JAVA_FLOAT, values.length);
            MemorySegment.copy(values, 0, s, ValueLayout.JAVA_FLOAT, 0, values.length);
            return upload(s);
        }
    }

    /** Writes {@code values} at {@code offset} bytes of {@code into}, ordered with this stream's work. */
    public void write(int[] values, DeviceBuffer into, long offset) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(ValueLayout.JAVA_INT, values.length);
            MemorySegment.copy(values, 0, s, ValueLayout.JAVA_INT, 0, values.length);
            into.copyFromAsync(s, offset, stream);
            stream.synchronize();
        }
    }

    /** Writes one int64 at the start of {@code into}, ordered with this stream's work. */
    public void write(long value, DeviceBuffer into) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(ValueLayout.JAVA_LONG);
            s.set(ValueLayout.JAVA_LONG, 0, value);
            into.copyFromAsync(s, 0, stream);
            stream.synchronize();
        }
    }

    /**
     * Records what {@code work} enqueues on this stream into a graph (no allocations or synchronization inside), to
     * replay with {@link io.moe4j.backend.cuda.driver.CudaGraph#launch}.
     */
    public io.moe4j.backend.cuda.driver.CudaGraph capture(Runnable work) {
        return stream.capture(work, overlapped);
    }

    /** Waits for this stream's work, then reads {@code count} floats at {@code offset} bytes of {@code from}. */
    public float[] readFloats(DeviceBuffer from, long offset, int count) {
        MemorySegment s = land(from, offset, 4L * count);
        return s.toArray(ValueLayout.JAVA_FLOAT);
    }

    /**
     * The index of the largest of the {@code n} floats at {@code x} (the lowest on ties: {@link
     * io.moe4j.model.Logits#argmax}'s rule), or -1 where that value is NaN or -infinity (the greedy draw's "no finite
     * choice"), computed on the device; waits for this stream and reads back that one int through {@code scratch} (4
     * bytes of device memory).
     */
    public int argmax(long x, int n, DeviceBuffer scratch) {
        return argmaxRows(x, 1, n, scratch)[0];
    }

    /**
     * {@link #argmax} of each of {@code rows} rows of n floats at x ([rows, n]): waits for this stream and reads the
     * ids back through {@code scratch} (4 bytes a row of device memory).
     */
    public int[] argmaxRows(long x, int rows, int n, DeviceBuffer scratch) {
        launch("model_argmax", rows, 1, ARGMAX_THREADS, a -> a.pointer(x).i32(n).pointer(scratch));
        return land(scratch, 0, 4L * rows).toArray(ValueLayout.JAVA_INT);
    }

    /** Bytes of one draw rule as {@link #sampleRows} reads it (model_ops.cu's SampleRule). */
    public static final int DRAW_RULE_BYTES = 40;
    /** The longest row {@link #sampleRows} takes: a thread counts its elements of a bin in 16 bits. */
    static final int SAMPLE_MAX_COLUMNS = 65535 * SAMPLE_THREADS;
    /** SAMPLE_MAX_BLOCKS and sizeof(SampleGrid) in the source: the most blocks a row, and a row's meeting place. */
    private static final int SAMPLE_MAX_BLOCKS = 64;
    private static final long SAMPLE_GRID_BYTES = 8 + 2L * SAMPLE_MAX_BLOCKS * (16 * 4 + 16 * 8 + 8 + 4 + 4);

    /**
     * Writes one draw rule at {@code offset} of host memory, for {@link #sampleRows}: the random number in [0, 1),
     * temperature (> 0), top-p, min-p and top-k (0: all) of {@code io.moe4j.model.TokenDraw}.
     */
    public static void stageDrawRule(MemorySegment into, long offset, double uniform, double temperature, double topP,
                                     double minP, int topK) {
        into.set(ValueLayout.JAVA_DOUBLE, offset, uniform);
        into.set(ValueLayout.JAVA_DOUBLE, offset + 8, temperature);
        into.set(ValueLayout.JAVA_DOUBLE, offset + 16, topP);
        into.set(ValueLayout.JAVA_DOUBLE, offset + 24, minP);
        into.set(ValueLayout.JAVA_INT, offset + 32, topK);
        into.set(ValueLayout.JAVA_INT, offset + 36, 0);
    }

    /**
     * A token drawn from each of {@code rows} rows of n floats at x ([rows, n]) by the rules at {@code rules}
     * ({@link #DRAW_RULE_BYTES} a row, device memory; {@code io.moe4j.model.TokenDraw}'s rule, with float32
     * weights), computed on the device; waits for this stream and reads the ids back through {@code scratch} (4 bytes
     * a row). A row with no finite logit gives -1.
     */
    public int[] sampleRows(long x, int rows, int n, long rules, DeviceBuffer scratch) {
        // A row's blocks meet at grid barriers, so the launch is cooperative (all resident): as many blocks a row as
        // fit beside the other rows (each thread then holds a few logits), rows in groups when even one a row
        // does not fit.
        CudaFunction f = engine.kernels().get(SOURCE, "model_sample_rows", List.of()).function();
        if (sampleResident == 0) { // a property of the kernel and the device: asked once, not every token
            sampleResident = f.maxActiveBlocksPerSm(SAMPLE_THREADS, 0) * engine.context().device().multiprocessors();
        }
        int resident = sampleResident;
        int group = Math.min(rows, resident);
        int blocks = Math.max(1, Math.min(SAMPLE_MAX_BLOCKS, resident / group));
        // the threads of a row must not each count more than 16 bits' worth of one bin
        if (n < 1 || (long) n > (long) SAMPLE_MAX_COLUMNS * blocks) {
            throw new MoeException("unsupported on cuda: drawing from rows of " + n + " logits (at most "
                    + (long) SAMPLE_MAX_COLUMNS * blocks + ")");
        }
        if (sampleGrids == null || sampleGrids.byteSize() < SAMPLE_GRID_BYTES * group) {
            stream.synchronize();
            if (sampleGrids != null) {
                sampleGrids.close();
            }
            // zero bits: every barrier count starts at zero, and each barrier leaves it so
            sampleGrids = upload(new float[Math.toIntExact(SAMPLE_GRID_BYTES * group / 4)]);
        }
        for (int r0 = 0; r0 < rows; r0 += group) {
            int r = Math.min(group, rows - r0);
            long at = r0;
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs a = new KernelArgs(arena);
                a.pointer(x + 4L * n * at).i32(n).pointer(rules + DRAW_RULE_BYTES * at)
                        .pointer(scratch.pointer() + 4 * at).pointer(sampleGrids);
                f.launchCooperative(blocks, r, SAMPLE_THREADS, stream, a);
            }
        }
        return land(scratch, 0, 4L * rows).toArray(ValueLayout.JAVA_INT);
    }

    /** Waits for this stream's work, then reads {@code count} doubles at the start of {@code from}. */
    public double[] readDoubles(DeviceBuffer from, int count) {
        MemorySegment s = land(from, 0, 8L * count);
        return s.toArray(ValueLayout.JAVA_DOUBLE);
    }

    private MemorySegment land(DeviceBuffer from, long offset, long bytes) {
        MemorySegment s = landing(bytes);
        from.copyToAsync(s, offset, stream);
        stream.synchronize();
        return s;
    }

    /** The first {@code bytes} of the pinned landing buffer, grown (after this stream's work) when too small. */
    private MemorySegment landing(long bytes) {
        if (landing == null || landing.byteSize() < bytes) {
            stream.synchronize();
            if (landing != null) {
                landing.close();
            }
            landing = engine.context().allocatePinned(Math.max(bytes, 1 << 16));
        }
        return landing.segment().asSlice(0, bytes);
    }

    public void synchronize() {
        stream.synchronize();
    }

    /** out [tokens, hidden] float32 = rows {@code ids} (int32, on the device) of the bf16 table. */
    public void embed(long table, long ids, long out, int tokens, int hidden) {
        launch("model_embed", tokens, 1, THREADS, a -> a.pointer(table).pointer(ids).pointer(out).i32(hidden));
    }

    /**
     * RMSNorm of {@code rows} rows of n floats into out; {@code weight} float32 [n] or 0 for none. With {@code add}
     * (not 0) each row of x first takes the matching row of add (x += add, written back): the residual stream.
     */
    public void rmsNorm(long x, long add, long weight, long out, int rows, int n, float eps) {
        rmsNorm(x, add, 0L, weight, out, rows, n, eps);
    }

    /**
     * {@link #rmsNorm(long, long, long, long, int, int, float)} where the residual takes two blocks' outputs (a MoE
     * layer's routed and shared experts): x += (add + add2), then the norm; {@code add2} 0 for none.
     */
    public void rmsNorm(long x, long add, long add2, long weight, long out, int rows, int n, float eps) {
        if (add2 != 0 && add == 0) {
            throw new IllegalArgumentException("a second residual input needs a first");
        }
        launch("model_rms_norm", rows, 1, normThreads(n),
                a -> a.pointer(x).pointer(add).pointer(add2).pointer(weight).pointer(out).i32(n).f32(eps)
                        .i32(early("norm", rows)));
    }

    /**
     * {@link #rmsNorm(long, long, long, long, int, int, float)} with {@code next}'s input rule (its
     * quantize-dequantize) applied to the normed rows as they are written (model_rms_norm_qdq): out then holds what
     * {@code next} reads, for {@link #linearOfPrepared}, and the linear's own input stage, a kernel of its own on a
     * decode step's chain, goes. The norm's sums are model_rms_norm's own; the rule is the input stage's code, so the
     * bits are the same.
     */
    public void rmsNormForLinear(long x, long add, long add2, long weight, long out, int rows, int n, float eps,
            DeviceLinear next) {
        if (!next.normPreparesInput(n)) {
            throw new IllegalArgumentException("the input rule of " + next.describe() + " is not one a norm applies"
                    + " to rows of " + n);
        }
        if (add2 != 0 && add == 0) {
            throw new IllegalArgumentException("a second residual input needs a first");
        }
        KernelCache.Kernel k = engine.kernels().get(SOURCE, "model_rms_norm_qdq", List.of());
        int hold = normThreads(n);
        int threads = Math.max(hold, Math.min(NORM_QDQ_THREADS,
                CudaExperts.rowThreads(k, rows, engine.context().device().multiprocessors())));
        launch(k, "model_rms_norm_qdq", rows, 1, 1, threads, 4 * (n + 32),
                a -> next.appendInputRule(a.pointer(x).pointer(add).pointer(add2).pointer(weight).pointer(out).i32(n)
                        .f32(eps).i32(early("norm", rows)).i32(hold)));
    }

    /**
     * The most threads of model_rms_norm_qdq's block on a decode step's row (the quantizer's loops take them; the norm
     * only the first {@link #normThreads}). H200, Qwen3-30B-A3B FP8 (2048 values, 16 groups of 128, a warp a group),
     * 12 layers, the decode step's graph under CUPTI, twice each in one call: 512 threads 4.50-4.59 µs added a layer,
     * 1024 4.88-4.95, 256 5.57-5.60.
     */
    private static final int NORM_QDQ_THREADS = 512;

    /** Whether model_rms_norm holds rows of {@code n} values in registers (a multiple of 4, at most 4 · 4096). */
    static boolean normHolds(int n) {
        return n % 4 == 0 && n / 4 <= NORM_HOLD * 1024;
    }

    /** float4 a thread of model_rms_norm holds in registers (NORM_HOLD in the source). */
    private static final int NORM_HOLD = 4;

    /**
     * Threads of a norm's block: rows of a multiple of 4 floats that fit {@link #NORM_HOLD} float4 a thread take as
     * few warps as hold them (a decode step's norm is one block, bound by load latency: every load in flight at
     * once); other rows the strided loop with {@link #THREADS}.
     */
    static int normThreads(int n) {
        int float4s = n / 4;
        if (n % 4 != 0) {
            return THREADS;
        }
        if (float4s > NORM_HOLD * 1024) {
            return 1024;
        }
        return Math.max(64, Math.ceilDiv(Math.ceilDiv(float4s, NORM_HOLD), 32) * 32);
    }

    /**
     * By default, batches from this many tokens take the tensor-core linear (x as two bf16 terms: ~16 bits of each
     * product kept, against 24 on the CUDA cores); smaller ones the CUDA-core kernels, whose sums are the same for
     * any batch. H200, gpt-oss-20b shapes, DeviceModelBench, two rounds in one call, a step with the threshold at 2
     * against 8 (the kernel converting x only for the 8-token tiles the batch reaches): batch 2 2.89 -> 3.14 ms,
     * batch 4 4.17-4.18 -> 4.02, batch 6 5.56-5.63 -> 4.86-4.87; earlier, 8 against 16: batch 8 6.95-7.06 ->
     * 5.65-5.72. System property {@code moe4j.cuda.mmaLinearTokens} moves it (benches).
     */
    public static final int MMA_LINEAR_TOKENS = 4;
    /** This instance's threshold ({@link #MMA_LINEAR_TOKENS} unless the system property says otherwise). */
    private final int mmaLinearTokens = Integer.getInteger("moe4j.cuda.mmaLinearTokens", MMA_LINEAR_TOKENS);
    /**
     * The most 16-byte groups of a weight row that a one-token linear stages in shared memory (64 KiB a block of 8
     * rows: three blocks a multiprocessor, a one-wave grid for o's 360 blocks of gpt-oss-20b on 132 multiprocessors).
     */
    static final int STAGED_GROUPS_MAX = 512;
    /**
     * Whether one token's bf16 linears stage their weights in shared memory before the kernel ahead ends
     * ({@code -Dmoe4j.cuda.stagedLinear}, default true; false: the kernel that holds a few loads in registers).
     */
    private final boolean stagedLinear = Boolean.parseBoolean(System.getProperty("moe4j.cuda.stagedLinear", "true"));

    /**
     * The short kernels of a one-row pass that let the next kernel launch at their entry rather than after their
     * wait (allow_next_grid_if in moe4j_common.cuh): {@code -Dmoe4j.cuda.earlyLaunch}, a comma list of norm,
     * position, attend, router, select, plan, activate, combine (or all, or none). By default the activation: the
     * down GEMV's blocks are then resident and streaming their experts' weights (whose routes are known) while the
     * activation runs. Measured on an H200 (gpt-oss-20b shapes, 24 layers, the decode step replayed alone, each
     * setting in turn in one call), with the plan kernel after the selection: none 2023-2035 us, select 1999-2000
     * (the one-block plan starts while the selection runs), activate 1983-1986, both 1965-1967; every other role
     * alone changed nothing or lost, all eight took 2295-2299 (waiting blocks of the linears and GEMVs held the
     * multiprocessors and memory queues ahead of the kernels they waited for). With the plan written by the
     * selection ({@link #planInSelect}) the selection is followed by the first GEMV, whose early blocks lose again:
     * activate alone 1919-1921, with select 2014-2015. Passes of more rows never launch early: there the waiting
     * blocks held multiprocessors that the running kernel's many blocks needed.
     */
    private final Set<String> earlyLaunch = earlyLaunchRoles(
            System.getProperty("moe4j.cuda.earlyLaunch", "activate"));

    static Set<String> earlyLaunchRoles(String list) {
        Set<String> all = Set.of("norm", "position", "attend", "router", "select", "plan",
                "activate", "combine");
        if (list.isBlank() || list.equals("none")) {
            return Set.of();
        }
        if (list.equals("all")) {
            return all;
        }
        Set<String> roles = Set.copyOf(Arrays.asList(list.trim().split("\\s*,\\s*")));
        for (String r : roles) {
            if (!all.contains(r)) {
                throw new IllegalArgumentException("moe4j.cuda.earlyLaunch: unknown kernel role '" + r + "'; known: "
                        + all);
            }
        }
        return roles;
    }

    /** The {@code early} argument of a short kernel of {@code role} in a pass of {@code rows} rows. */
    private int early(String role, int rows) {
        return rows == 1 && earlyLaunch.contains(role) ? 1 : 0;
    }

    /** The experts' plan, activation and combine that launch early, as {@link CudaExperts#enqueuePlanned} takes. */
    private int expertsEarly(int rows) {
        return early("plan", rows) * CudaExperts.EARLY_PLAN | early("activate", rows) * CudaExperts.EARLY_ACTIVATE
                | early("combine", rows) * CudaExperts.EARLY_COMBINE;
    }

    /**
     * y [tokens, out] = x [tokens, in] · W^T (+ bias float32 [out]) for a bf16 W [out, in] (in even); added to y's
     * values when {@code accumulate}.
     */
    public void linearBf16(long x, long w, long bias, long y, int tokens, int in, int out, boolean accumulate) {
        linearBf16(x, w, bias, y, tokens, in, out, accumulate, 0L, 0L);
    }

    /**
     * The tensor-core linear's chunks in flight a warp (MMA_LIN_DEPTH in the source) when
     * {@code -Dmoe4j.cuda.linearDepth} names one (benches); the source's default (2) otherwise. H200, 24 layers,
     * batches of 8 / 64, two rounds in one call (`BATCHES=8,64 bash tools/gpu_flag_variants.sh 2 24`, with
     * {@code -Dmoe4j.cuda.linearRowTiles}): one row tile a warp, depth 1 5.29 / 11.92 and 5.21 / 11.61 ms a step,
     * depth 3 5.15 / 11.48 and 5.20 / 11.72; two row tiles, depth 1 4.98 / 11.38 and 5.18 / 11.07, depth 2 4.85 /
     * 11.33 and 4.87 / 11.27, depth 3 5.08 / 11.24 and 5.32 / 11.55 (more registers: fewer blocks a multiprocessor).
     */
    private final int linearDepth = Integer.getInteger("moe4j.cuda.linearDepth", 0);
    /**
     * 16-row tiles a warp of the tensor-core linear (MMA_LIN_ROW_TILES in the source, {@link #MMA_ROW_TILES} unless
     * {@code -Dmoe4j.cuda.linearRowTiles} says otherwise): a block of 4 warps covers 64 times that many rows.
     */
    private final int linearRowTiles = Integer.getInteger("moe4j.cuda.linearRowTiles", MMA_ROW_TILES);
    /** The source's MMA_LIN_ROW_TILES. */
    static final int MMA_ROW_TILES = 2;
    /** The tensor-core linear's compile options: the row tiles, and the depth when a property names one. */
    private final List<String> linearDefines = linearDepth > 0
            ? List.of("-DMMA_LIN_ROW_TILES=" + linearRowTiles, "-DMMA_LIN_DEPTH=" + linearDepth)
            : List.of("-DMMA_LIN_ROW_TILES=" + linearRowTiles);

    /**
     * The most K slices a tensor-core linear splits into (model_linear_bf16_mma's gridDim.z): a 64-token batch through
     * gpt-oss-20b's o linear (23 blocks of 128 rows) takes 12. H200, 24 layers, `BATCHES=64 bash
     * tools/gpu_flag_variants.sh 2 24` with {@code -Dmoe4j.cuda.linearMaxSlices} = 8, 12, 16 in one call: 11.27 /
     * 11.37, 11.09 / 11.13 and 11.04 / 11.14 ms a step.
     */
    private static final int MAX_SLICES = Integer.getInteger("moe4j.cuda.linearMaxSlices", 12);

    /**
     * Bytes of the partial sums {@link #linearBf16(long, long, long, long, int, int, int, boolean, long, long)} may
     * use for batches of up to {@code tokens} tokens through linears of up to {@code out} outputs.
     */
    public static long slicePartialsBytes(int tokens, int out) {
        return 4L * MAX_SLICES * Math.min(tokens, 64) * out;
    }

    /**
     * {@link #linearBf16} with device memory for partial sums ({@code partials}, {@code partialsBytes}; 0 for none):
     * a tensor-core batch too small to fill the GPU with 128-row blocks then splits K over several blocks a row block
     * (their sums added in a fixed order by a second kernel), instead of the 16-row blocks that read x per 16 rows.
     * The memory must outlive any graph the call is recorded into.
     */
    public void linearBf16(long x, long w, long bias, long y, int tokens, int in, int out, boolean accumulate,
            long partials, long partialsBytes) {
        if ((in & 1) != 0) {
            throw new IllegalArgumentException("bf16 linear needs an even input width, got " + in);
        }
        if (tokens >= mmaLinearTokens && (in & 31) == 0 && engine.context().device().computeCapability() >= 80) {
            // blocks of 128 rows (4 warps of 2 x 16, MMA_LIN_WARPS and MMA_LIN_ROW_TILES in the source) over passes
            // of 64 tokens share one split of x; where those are too few to fill the GPU twice over (decode batches
            // through the attention linears), K split into slices, or blocks of 16 rows whose warps split K
            int passes = Math.ceilDiv(tokens, 64);
            int rowsPerBlock = 64 * linearRowTiles;
            int blocks = passes * Math.ceilDiv(out, rowsPerBlock);
            int wanted = 2 * engine.context().device().multiprocessors();
            int chunks = in / 32;
            int slices = 1;
            // K slices of at least 4 chunks until the blocks fill the GPU twice over, every slice non-empty
            while (blocks * slices < wanted && slices < MAX_SLICES && chunks / (slices + 1) >= 4) {
                slices++;
            }
            while (slices > 1 && (slices - 1) * Math.ceilDiv(chunks, slices) >= chunks) {
                slices--;
            }
            boolean sliced = slices > 1 && 4L * slices * tokens * out <= partialsBytes && partials != 0;
            if (blocks >= wanted || sliced) {
                int z = sliced ? slices : 1;
                int rowBlocks = Math.ceilDiv(out, rowsPerBlock);
                launch(SOURCE, "model_linear_bf16_mma", linearDefines, passes, rowBlocks, z, 128, 0,
                        a -> a.pointer(x).pointer(w).pointer(bias).pointer(y).i32(tokens).i32(in).i32(out)
                                .i32(accumulate ? 1 : 0).pointer(sliced ? partials : 0L));
                if (sliced) {
                    launch("model_linear_slices", (int) Math.ceilDiv((long) tokens * out, THREADS), 1, THREADS,
                            a -> a.pointer(partials).i32(z).pointer(bias).pointer(y).i32(tokens).i32(out)
                                    .i32(accumulate ? 1 : 0));
                }
            } else {
                launch("model_linear_bf16_mma_split", Math.ceilDiv(out, 16), 1, 128, a -> a.pointer(x).pointer(w)
                        .pointer(bias).pointer(y).i32(tokens).i32(in).i32(out).i32(accumulate ? 1 : 0));
            }
            return;
        }
        if (tokens > 1 && (in & 7) == 0) {
            // batches: R rows a warp (the same sums as one token's), as many as keep two blocks a multiprocessor,
            // or one from 16 tokens on (when the tensor-core threshold is moved that high), where reloading x for
            // fewer rows costs more than idle multiprocessors
            int r = 8;
            int blocks = (tokens >= 16 ? 1 : 2) * engine.context().device().multiprocessors();
            while (r > 1 && Math.ceilDiv(out, WARPS * r) < blocks) {
                r /= 2;
            }
            launch("model_linear_bf16_r" + r, Math.ceilDiv(out, WARPS * r), 1, THREADS, a -> a.pointer(x).pointer(w)
                    .pointer(bias).pointer(y).i32(tokens).i32(in).i32(out).i32(accumulate ? 1 : 0));
            return;
        }
        if (tokens == 1 && (in & 7) == 0 && stagedLinear && engine.context().device().computeCapability() >= 80) {
            // a decode step's linears: the weights copied into shared memory while the kernels ahead still run
            int staged = Math.min(in / 8, STAGED_GROUPS_MAX);
            launch(SOURCE, "model_linear_bf16_staged", List.of(), Math.ceilDiv(out, WARPS), 1, 1, THREADS,
                    WARPS * staged * 16, a -> a.pointer(x).pointer(w).pointer(bias).pointer(y).i32(in).i32(out)
                            .i32(accumulate ? 1 : 0).i32(staged));
            return;
        }
        launch("model_linear_bf16", Math.ceilDiv(out, WARPS), 1, THREADS, a -> a.pointer(x).pointer(w).pointer(bias)
                .pointer(y).i32(tokens).i32(in).i32(out).i32(accumulate ? 1 : 0));
    }

    /** From how many tokens {@link #linearBf16} runs on tensor cores. */
    public int mmaLinearTokens() {
        return mmaLinearTokens;
    }

    /**
     * Waits for this stream's work, then reads {@code rows} rows of {@code cols} floats at the start of {@code from},
     * each into its own array (one transfer, one copy a row).
     */
    public float[][] readRows(DeviceBuffer from, int rows, int cols) {
        MemorySegment s = land(from, 0, 4L * rows * cols);
        float[][] out = new float[rows][];
        // rows in parallel: a batch's logits are tens of MB, and one thread copies a few GB/s
        java.util.stream.IntStream.range(0, rows).parallel().forEach(i -> {
            float[] row = new float[cols];
            MemorySegment.copy(s, ValueLayout.JAVA_FLOAT, 4L * i * cols, row, 0, cols);
            out[i] = row;
        });
        return out;
    }

    /**
     * {@link #readRows} of only the rows marked in {@code wanted} (null in the result for the others): only their
     * bytes cross to the host, one transfer a row, then one wait.
     */
    public float[][] readRows(DeviceBuffer from, int cols, boolean[] wanted) {
        int rows = wanted.length;
        int[] slot = new int[rows];
        int count = 0;
        for (int i = 0; i < rows; i++) {
            slot[i] = wanted[i] ? count++ : -1;
        }
        if (count == rows) {
            return readRows(from, rows, cols); // one transfer
        }
        long rowBytes = 4L * cols;
        MemorySegment s = landing(rowBytes * count);
        for (int i = 0; i < rows; i++) {
            if (slot[i] >= 0) {
                from.copyToAsync(s.asSlice(rowBytes * slot[i], rowBytes), rowBytes * i, stream);
            }
        }
        stream.synchronize();
        float[][] out = new float[rows][];
        // rows in parallel: a batch's logits are tens of MB, and one thread copies a few GB/s
        java.util.stream.IntStream.range(0, rows).parallel().forEach(i -> {
            if (slot[i] >= 0) {
                float[] row = new float[cols];
                MemorySegment.copy(s, ValueLayout.JAVA_FLOAT, rowBytes * slot[i], row, 0, cols);
                out[i] = row;
            }
        });
        return out;
    }


    /**
     * The q and k heads of fused rows qkv [tokens, (heads + 2 kvHeads) headDim] made ready for attention, in place,
     * and each token's k and v written into its cache row ([position][k | v], float32): per head the {@code norm}
     * (weighted RMSNorm before RoPE with {@code qNorm} / {@code kNorm} float32 [headDim], or the weightless one after
     * it), RoPE from tables cos/sin [position, headDim / 2] (the attention factor applied; 0 for a NoPE layer), and
     * for queries Llama-4's temperature ({@code temperature} null for none). Row t is at {@code positions[t]} (int64)
     * and its cache of this layer is at the device address {@code caches[t]} when {@code perRow} (rows of several
     * sequences), else {@code caches[0]}: all tables on the device, written before the pass, never by a kernel.
     */
    public void positionRows(long qkv, int tokens, int heads, int kvHeads, int headDim, long cos, long sin,
            boolean interleaved, QkNormMode norm, long qNorm, long kNorm, float eps, double[] temperature,
            long positions, long caches, boolean perRow) {
        if ((headDim & 1) != 0 || headDim / 2 > 1024) {
            throw new IllegalArgumentException("head_dim " + headDim + ": the device takes even widths up to 2048");
        }
        int threads = Math.ceilDiv(headDim / 2, 32) * 32;
        double floorScale = temperature == null ? 0.0 : temperature[0];
        double attnScale = temperature == null ? 0.0 : temperature[1];
        launch("model_position_rows", tokens, heads + kvHeads, threads, a -> a.pointer(qkv).i32(heads).i32(kvHeads)
                .i32(headDim).pointer(cos).pointer(sin).i32(interleaved ? 1 : 0).i32(norm.ordinal()).pointer(qNorm)
                .pointer(kNorm).f32(eps).f64(floorScale).f64(attnScale).pointer(positions).pointer(caches)
                .i32(perRow ? 1 : 0).i32(early("position", tokens)));
    }

    /** The per-head norm of {@link #positionRows} (the ordinal is the kernel's normMode). */
    public enum QkNormMode {
        NONE,
        /** RMSNorm with a weight, before RoPE (Qwen3). */
        WEIGHTED_BEFORE_ROPE,
        /** RMSNorm without weight, after RoPE (Llama-4's L2 norm). */
        PLAIN_AFTER_ROPE
    }

    /**
     * Causal grouped-query attention of each token row of q (rows qStride floats apart) over its sequence's cache
     * ([position][k | v]) into out [tokens, heads · headDim]: the visible positions are the last {@code window}
     * positions of the query (sliding), of its chunk of {@code -window} positions (chunked), or all (0), the head's
     * sink logit in the softmax when {@code sinks} (float32 [heads]) is given. A block takes a kv head and its query
     * heads over a piece of the span ({@link #attendSplits} pieces); {@code partials} ({@link #attendPartialsBytes})
     * and {@code arrivals} (an int a row and kv head, zero, and left zero) carry the pieces to the block that merges
     * them. A pass of one sequence's rows ({@code perRow} false) of at least {@link #attendTileRows} rows attends in
     * tiles instead ({@link #attendTiles}), where the head's width allows.
     *
     * <p>With {@code next} (the linear that reads out, or null) whose rule {@link DeviceLinear#headsPrepareInput},
     * the row kernel writes each head through that rule (the input stage's code, so the same bits) and this returns
     * true: out is then for {@link #linearOfPrepared}. It returns false where out holds the attention as it is (no
     * {@code next}, another rule, or a pass in tiles).
     */
    public boolean attendRows(long q, int qStride, long caches, boolean perRow, long sinks, long out, int tokens,
            long positions, int heads, int kvHeads, int headDim, int window, float scale, long partials,
            long partialsBytes, long arrivals, long arrivalsBytes, DeviceLinear next) {
        if (attendsInTiles(perRow, tokens, headDim)) {
            attendTiles(q, qStride, caches, sinks, out, tokens, positions, heads, kvHeads, headDim, window, scale);
            return false;
        }
        boolean prepares = next != null && headsPrepareInput && next.headsPrepareInput(headDim)
                && next.inFeatures() == heads * headDim;
        if (headDim > HEAD_DIM_MAX || headDim % 4 != 0 || heads % kvHeads != 0 || heads / kvHeads > GQA_GROUP_MAX) {
            throw new IllegalArgumentException("attention of " + heads + " heads over " + kvHeads + " kv heads of "
                    + headDim + ": the device kernel takes up to " + GQA_GROUP_MAX + " query heads a kv head, heads"
                    + " of a multiple of 4 up to " + HEAD_DIM_MAX);
        }
        int splits = attendSplits(tokens, kvHeads);
        long needed = splits == 1 ? 0 : 4L * tokens * heads * splits * (headDim + 2);
        if (partialsBytes < needed || arrivalsBytes < 4L * tokens * kvHeads) {
            throw new IllegalArgumentException("attention of " + tokens + " rows in " + splits + " pieces needs "
                    + needed + " bytes of partials and " + 4L * tokens * kvHeads + " of arrivals; got "
                    + partialsBytes + " and " + arrivalsBytes);
        }
        List<String> variant = attendWidthCompiled ? List.of("-DGQA_HEAD_DIM=" + headDim) : List.of();
        launch(SOURCE, "model_attend_rows", variant, tokens, kvHeads, splits, GQA_THREADS, 0, a -> a.pointer(q)
                .i32(qStride).pointer(caches).i32(perRow ? 1 : 0).pointer(sinks).pointer(out).pointer(positions)
                .i32(heads).i32(kvHeads).i32(headDim).i32(window).f32(scale).pointer(partials).pointer(arrivals)
                .i32(early("attend", tokens)).with(b -> prepares ? next.appendInputRule(b) : DeviceQuant.appendNone(b)));
        return prepares;
    }

    /**
     * Whether {@link #attendRows} applies the next linear's input rule where it can ({@code
     * -Dmoe4j.cuda.headsPrepareInput}, default true; false for A/B runs).
     */
    private final boolean headsPrepareInput = !"false".equals(System.getProperty("moe4j.cuda.headsPrepareInput"));

    /**
     * The fewest rows of one sequence's pass that {@link #attendRows} attends in tiles: {@code
     * -Dmoe4j.cuda.attendTileRows} (0: never), by default a tile's {@value #TILE_ROWS} rows. Below that a tile would
     * be mostly empty, and the row kernel's blocks split a long span among them, which a block of the tile kernel
     * does not (at 128 rows after 8000 positions the tiles were still 2.4x faster; fewer rows were not measured).
     */
    public static int attendTileRows() {
        return Integer.getInteger("moe4j.cuda.attendTileRows", TILE_ROWS);
    }

    /** Whether {@link #attendRows} takes {@link #attendTiles} for a pass like this. */
    public static boolean attendsInTiles(boolean perRow, int tokens, int headDim) {
        int least = attendTileRows();
        return !perRow && least > 0 && tokens >= least && headDim % 8 == 0 && headDim <= TILE_DIM_MAX;
    }

    /**
     * {@link #attendRows} for the rows of one sequence (one cache at {@code caches}), TILE_ROWS rows of a query head
     * a block: the keys and values a tile's rows see are read once for all of them (a prompt's attention), and the
     * products run on tensor cores in tf32 three times (float32's accuracy). Each row is masked by its own visible
     * span. {@code headDim} a multiple of 8, at most {@value #TILE_DIM_MAX}.
     */
    public void attendTiles(long q, int qStride, long caches, long sinks, long out, int tokens, long positions,
            int heads, int kvHeads, int headDim, int window, float scale) {
        if (headDim % 8 != 0 || headDim > TILE_DIM_MAX || heads % kvHeads != 0) {
            throw new IllegalArgumentException("tiled attention of " + heads + " heads over " + kvHeads + " kv heads"
                    + " of " + headDim + ": heads of a multiple of 8 up to " + TILE_DIM_MAX + ", whole groups");
        }
        // queries and two buffers of keys (rows padded by 4 floats) and of values (by 8), as the kernel lays them out
        int shared = 4 * (TILE_ROWS * (headDim + 4) + 2 * TILE_KEYS * (headDim + 4) + 2 * TILE_KEYS * (headDim + 8));
        // compiled for the head's width: unrolled loops and only the accumulators it needs (registers: occupancy)
        launch("attend_tiles.cu", "model_attend_tiles", List.of("-DTILE_HEAD_DIM=" + headDim),
                Math.ceilDiv(tokens, TILE_ROWS), heads, 1, 128, shared, a -> a.pointer(q).i32(qStride)
                        .pointer(caches).pointer(sinks).pointer(out).pointer(positions).i32(tokens).i32(heads)
                        .i32(kvHeads).i32(window).f32(scale));
    }

    /** Rows of a block of {@link #attendTiles} (attend_tiles.cu's TILE_ROWS), its key positions a tile, widest head. */
    private static final int TILE_ROWS = 64;
    private static final int TILE_KEYS = 32;
    private static final int TILE_DIM_MAX = 128;

    /**
     * Whether {@link #attendRows} runs the kernel compiled for the head's width (GQA_HEAD_DIM in the source; one
     * module a width): unless {@code -Dmoe4j.cuda.attendWidthCompiled=false} (A/B runs).
     */
    private final boolean attendWidthCompiled = !"false".equals(System.getProperty("moe4j.cuda.attendWidthCompiled"));

    /** The most query heads a kv head may have in {@link #attendRows}: a warp each (GQA_WARPS in the source). */
    public static final int GQA_GROUP_MAX = 16;
    private static final int GQA_THREADS = 32 * GQA_GROUP_MAX;
    private static final int MAX_SPLITS = 64; // GQA_PIECES_MAX in the source

    /**
     * How many pieces {@link #attendRows} may cut each row's visible span into for a pass of {@code tokens} rows:
     * enough blocks for two a multiprocessor (a decode step of gpt-oss-20b's 8 kv heads on 132: 33), one for
     * prompts. The kernel takes fewer where the span is short (pieces of at least four tiles of positions), but a
     * recorded step's grid keeps them all (the blocks past the span's pieces return at once).
     * {@code -Dmoe4j.cuda.attendPiecesMax} caps them (A/B runs: what those blocks cost a step over a short span; H200,
     * gpt-oss-20b shapes, 24 layers, the step at a few dozen positions replayed alone: 1891 us capped at one piece
     * against 1898-1901, 0.3 us a layer).
     */
    public int attendSplits(int tokens, int kvHeads) {
        long blocks = (long) tokens * kvHeads;
        long wanted = Math.ceilDiv(2L * engine.context().device().multiprocessors(), blocks);
        return (int) Math.max(1, Math.min(attendPiecesMax, wanted));
    }

    private final int attendPiecesMax = Math.clamp(Integer.getInteger("moe4j.cuda.attendPiecesMax", MAX_SPLITS), 1,
            MAX_SPLITS);

    /** Bytes of {@link #attendRows}'s partials for any pass of up to {@code tokens} rows. */
    public long attendPartialsBytes(int tokens, int heads, int kvHeads, int headDim) {
        long most = 0;
        for (int r = 1; r <= tokens; r++) {
            int splits = attendSplits(r, kvHeads);
            if (splits == 1) {
                break; // more rows only take fewer pieces
            }
            most = Math.max(most, 4L * r * heads * splits * (headDim + 2));
        }
        return most;
    }

    /**
     * DeepSeek MLA after q_b_proj and kv_a_proj_with_mqa: the rope part of each query head of q [tokens, heads,
     * nope + rope] rotated in place; each latent row [lora + rope] normalized over its first lora values (weight
     * float32 [lora]) into latentOut [tokens, lora] and its rope key rotated into the start of the token's cache row
     * (rows of {@code rowWidth} floats; tables as {@link #positionRows}).
     */
    public void mlaPositionRows(long q, int tokens, int heads, int nope, int rope, long latent, int lora, long weight,
            float eps, long latentOut, long cos, long sin, boolean interleaved, long positions, long caches,
            boolean perRow, int rowWidth) {
        launch("model_mla_position_rows", tokens, heads + 1, THREADS, a -> a.pointer(q).i32(heads).i32(nope).i32(rope)
                .pointer(latent).i32(lora).pointer(weight).f32(eps).pointer(latentOut).pointer(cos).pointer(sin)
                .i32(interleaved ? 1 : 0).pointer(positions).pointer(caches).i32(perRow ? 1 : 0).i32(rowWidth));
    }

    /**
     * Each token's latent rows [tokens, width] (as kv_b_proj reads them) into its cache row after the rope key (rows
     * rope + width floats).
     */
    public void mlaStoreRows(long latent, int tokens, int width, int rope, long positions, long caches,
            boolean perRow) {
        launch("model_mla_store_rows", tokens, 1, THREADS, a -> a.pointer(latent).i32(width).i32(rope)
                .pointer(positions).pointer(caches).i32(perRow ? 1 : 0));
    }

    /** The widest latent (kv_lora_rank) and rope key the device's latent attention takes (LATENT_MAX, LATENT_ROPE_MAX). */
    public static final int LATENT_MAX = 512;
    public static final int LATENT_ROPE_MAX = 64;

    /**
     * Multi-head latent attention of q [tokens, heads, nope + rope] over each row's latent cache (rows [rope | lora]),
     * with kv_b_proj's float rows {@code kvB} [heads · (nope + vDim), lora] taken into the query and the output:
     * out [tokens, heads · vDim]. With {@code next} (o_proj, or null), as {@link #attendRows}: each head written
     * through its input rule where that rule is local to a head, and true returned; false where out holds the
     * attention as it is (a pass in tiles too).
     */
    public boolean attendLatentRows(long q, long kvB, long caches, boolean perRow, long out, int tokens,
            long positions, int heads, int nope, int rope, int vDim, int lora, float scale, DeviceLinear next) {
        if (lora > LATENT_MAX || rope > LATENT_ROPE_MAX || nope > HEAD_DIM_MAX) {
            throw new IllegalArgumentException("latent attention of kv_lora_rank " + lora + ", rope " + rope
                    + ", nope " + nope + " exceeds the device kernel's " + LATENT_MAX + ", " + LATENT_ROPE_MAX + ", "
                    + HEAD_DIM_MAX);
        }
        if (attendsLatentInTiles(perRow, tokens, nope, rope, lora)) {
            attendLatentTiles(q, kvB, caches, out, tokens, positions, heads, nope, rope, vDim, lora, scale);
            return false;
        }
        boolean prepares = next != null && headsPrepareInput && vDim <= LATENT_MAX && next.headsPrepareInput(vDim)
                && next.inFeatures() == heads * vDim;
        launch("model_attend_latent_rows", tokens, heads, ATTEND_THREADS, a -> a.pointer(q).pointer(kvB)
                .pointer(caches).i32(perRow ? 1 : 0).pointer(out).pointer(positions).i32(heads).i32(nope).i32(rope)
                .i32(vDim).i32(lora).f32(scale).with(b -> prepares ? next.appendInputRule(b)
                        : DeviceQuant.appendNone(b)));
        return prepares;
    }

    /**
     * Whether {@link #attendLatentRows} takes {@link #attendLatentTiles} for a pass like this: one sequence's rows,
     * at least {@link #attendTileRows} of them, a latent of whole warps' width.
     */
    public static boolean attendsLatentInTiles(boolean perRow, int tokens, int nope, int rope, int lora) {
        int least = attendTileRows();
        return !perRow && least > 0 && tokens >= least && lora % 32 == 0 && lora <= LATENT_MAX && rope % 4 == 0
                && rope <= LATENT_ROPE_MAX && nope <= HEAD_DIM_MAX;
    }

    /**
     * {@link #attendLatentRows} for the rows of one sequence (one cache at {@code caches}), 32 rows of a head a
     * block: kv_b_proj's rows of the head and the cached latents are read once for the block's rows instead of once a
     * row (a prompt's attention). {@code lora} a multiple of 32, {@code rope} of 4.
     */
    public void attendLatentTiles(long q, long kvB, long caches, long out, int tokens, long positions, int heads,
            int nope, int rope, int vDim, int lora, float scale) {
        if (lora % 32 != 0 || lora > LATENT_MAX || rope % 4 != 0 || rope > LATENT_ROPE_MAX || nope > HEAD_DIM_MAX) {
            throw new IllegalArgumentException("tiled latent attention of kv_lora_rank " + lora + ", rope " + rope
                    + ", nope " + nope + ": the kernel takes a latent of a multiple of 32 up to " + LATENT_MAX
                    + ", a rope part of a multiple of 4 up to " + LATENT_ROPE_MAX + ", nope up to " + HEAD_DIM_MAX);
        }
        int pitch = rope + lora + 4;
        // queries, keys (or q_nope rows, whichever is wider) and weights, as the kernel lays them out
        int shared = 4 * (LATENT_TILE_ROWS * pitch + LATENT_TILE_ROWS * Math.max(pitch, nope)
                + LATENT_TILE_ROWS * (LATENT_TILE_ROWS + 4));
        launch("attend_latent_tiles.cu", "model_attend_latent_tiles", List.of(),
                Math.ceilDiv(tokens, LATENT_TILE_ROWS), heads, 1, 256, shared, a -> a.pointer(q).pointer(kvB)
                        .pointer(caches).pointer(out).pointer(positions).i32(tokens).i32(heads).i32(nope).i32(rope)
                        .i32(vDim).i32(lora).f32(scale));
    }

    /** Rows (and key positions) of a block of {@link #attendLatentTiles}: LT_ROWS and LT_KEYS in the source. */
    private static final int LATENT_TILE_ROWS = 32;

    /** g = silu(g) · u over n floats (a dense MLP's gate and up). */
    public void siluMul(long g, long u, long n) {
        launch("model_silu_mul", (int) Math.ceilDiv(n, THREADS), 1, THREADS, a -> a.pointer(g).pointer(u).i64(n));
    }

    /**
     * y [tokens, out] (rows {@code yPitch} floats apart) = the linear of x [tokens, in] on this stream, added to y
     * when {@code accumulate}; {@code rows} device memory for the prepared input ({@link
     * DeviceLinear#inputScratchBytes}), {@code partials} for the bf16 kernels' slice sums (both may be 0 and 0 when
     * the linear needs none).
     */
    public void linear(DeviceLinear linear, long x, long y, int yPitch, int tokens, boolean accumulate, long rows,
            long rowsBytes, long partials, long partialsBytes) {
        linear.enqueue(this, engine, tuning, x, y, yPitch, tokens, accumulate, rows, rowsBytes, partials,
                partialsBytes, false);
    }

    /**
     * {@link #linear} of rows that a kernel ahead ({@link #rmsNormForLinear}, {@link #attendRows}) already took
     * through this linear's input rule (no input stage of its own).
     */
    public void linearOfPrepared(DeviceLinear linear, long x, long y, int yPitch, int tokens, boolean accumulate,
            long partials, long partialsBytes) {
        if (!linear.kernelsPrepareInput()) {
            throw new IllegalArgumentException("the input rule of " + linear.describe()
                    + " is not one a kernel ahead applies");
        }
        linear.enqueue(this, engine, tuning, x, y, yPitch, tokens, accumulate, 0L, 0L, partials, partialsBytes,
                true);
    }

    /**
     * The input rule of {@code linear} (its scheme's quantize-dequantize and column order) on x [tokens, in] into
     * {@code rows}, enqueued on this stream; returns what its GEMM reads (x itself when the input goes in as it is).
     */
    public long linearInput(DeviceLinear linear, long x, int tokens, long rows, long rowsBytes) {
        return linear.prepareInput(this, engine, x, tokens, rows, rowsBytes);
    }

    /**
     * A layer's shared experts (DeepSeek-V3, Llama-4: every token through one expert of weight 1) on x into out
     * ([tokens, hidden] float32), enqueued on this stream with no host round trip: the choices are filled on the
     * device, then planned and run as routed experts are ({@link #routeAndRunExperts}).
     */
    public void sharedExperts(Experts shared, DeviceBuffer x, int tokens, DeviceBuffer out, DeviceRoutes routes) {
        if (!(shared instanceof CudaExperts cuda) || !cuda.plansOnDevice(1)) {
            throw new MoeException("unsupported on cuda: shared experts prepared by the " + shared.backend()
                    + " backend cannot read device buffers");
        }
        if (tokens > DEVICE_ROUTED_PAIRS) {
            throw new IllegalArgumentException(tokens + " tokens exceed the " + DEVICE_ROUTED_PAIRS
                    + " pairs a layer routes on the device");
        }
        DeviceBuffer[] choices = CudaExperts.choices(routes, tokens, 1);
        launch("model_fill_choices", Math.ceilDiv(tokens, THREADS), 1, THREADS,
                a -> a.pointer(choices[0]).pointer(choices[1]).i32(tokens));
        cuda.enqueuePlanned(x, tokens, 1, false, out, routes, stream, expertsEarly(tokens), null);
    }

    /** Rows of x [rows, width] split into a [rows, na] and b [rows, width - na] (a stacked linear's two outputs). */
    public void splitRows(long x, int rows, int width, long a, int na, long b, int nb) {
        if (na + nb != width) {
            throw new IllegalArgumentException("rows of " + width + " split into " + na + " and " + nb);
        }
        launch("model_split_rows", rows, 1, THREADS, args -> args.pointer(x).pointer(a).i32(na).pointer(b).i32(nb));
    }

    /** out [count, n] = rows {@code rows[i]} (int32, on the device) of x [.., n], float32. */
    public void gatherRows(long x, long rows, long out, int count, int n) {
        launch("model_gather_rows", count, 1, THREADS, a -> a.pointer(x).pointer(rows).pointer(out).i32(n));
    }

    /** Router logits [tokens, experts] float64 of x [tokens, hidden] and a float32 router [experts, hidden]. */
    public void routerLogits(long x, long w, long bias, long logits, int tokens, int experts, int hidden) {
        launch("model_router_logits", experts, tokens, ROUTER_THREADS,
                a -> a.pointer(x).pointer(w).pointer(bias).pointer(logits).i32(experts).i32(hidden)
                        .i32(early("router", tokens)));
    }

    /**
     * {@link #rmsNorm} of h [tokens, hidden] (no residual) into xn, then {@link #routerLogits} of xn, as one kernel:
     * for passes of at most {@link #NORM_ROUTER_TOKENS} rows, where every block normalises its token's row again.
     */
    public void normRouterLogits(long h, long normWeight, float eps, long xn, long w, long bias, long logits,
            int tokens, int experts, int hidden) {
        if (tokens > NORM_ROUTER_TOKENS) {
            throw new IllegalArgumentException("the norm in the router kernel is for up to " + NORM_ROUTER_TOKENS
                    + " rows, got " + tokens);
        }
        launch("model_norm_router_logits", experts, tokens, ROUTER_THREADS, a -> a.pointer(h).pointer(normWeight)
                .f32(eps).pointer(xn).pointer(w).pointer(bias).pointer(logits).i32(experts).i32(hidden)
                .i32(early("router", tokens)));
    }

    /**
     * The most rows {@link #normRouterLogits} takes: each of a row's (expert) blocks reads the row, so beyond a decode
     * batch the norm's own kernel, which reads it once, costs less.
     */
    public static final int NORM_ROUTER_TOKENS = 8;

    /**
     * A layer's experts on device buffers (x and out [tokens, hidden] float32): waits for this stream's work, runs
     * the experts' pipeline, and returns with out written. Fails by name for experts of another backend.
     */
    public void experts(Experts experts, DeviceBuffer x, int tokens, Routing routing, DeviceBuffer out) {
        if (!(experts instanceof CudaExperts cuda)) {
            throw new MoeException("unsupported on cuda: experts prepared by the " + experts.backend()
                    + " backend cannot read device buffers");
        }
        stream.synchronize();
        if (expertsWorkspace == null) {
            expertsWorkspace = new Workspace(engine.context());
        }
        cuda.forward(x, tokens, routing, out, expertsWorkspace);
    }

    /**
     * The most routed pairs (tokens x top-k) a layer routes on the device, as many as a pass of 4096 tokens (the
     * longest a session runs, {@code moe4j.passTokens}) of top-8 routing holds; beyond it (or with
     * {@code -Dmoe4j.cuda.deviceRoutedPairs=N} lower, for comparisons) the choices go to the host, which plans the
     * experts. moe_route_plan is one block, whose warps each walk a stretch of the pairs.
     */
    public static final int DEVICE_ROUTED_PAIRS = Math.clamp(Integer.getInteger("moe4j.cuda.deviceRoutedPairs",
            32768), 1, 32768);

    /**
     * Whether {@link #routeAndRunExperts} takes this layer: experts prepared by the cuda backend, all of the router's
     * experts held (no expert parallelism), and a router within the device selection's limits.
     */
    public static boolean routesOnDevice(Experts experts, RouterSpec spec) {
        return experts instanceof CudaExperts cuda && CudaRouter.unsupportedReason(spec) == null
                && cuda.plansOnDevice(spec.numExperts());
    }

    /** The device memory of layers routed on the device, for one user at a time (a sequence, or a batch's runner). */
    public DeviceRoutes newRoutes() {
        return new DeviceRoutes(engine.context());
    }

    /**
     * A MoE layer routed on the device, enqueued on this stream without waiting: each token's choices from its
     * router logits ([tokens, experts] float64, bias included) with {@link io.moe4j.routing.Router#select}'s rules
     * (moe_router_select: ties to the lower expert, choices sorted by expert), the routing plan from the choices, then
     * the experts on x into out ([tokens, hidden] float32). {@code correction}: DeepSeek's score correction (float32
     * [experts]) or 0. The caller checked {@link #routesOnDevice}.
     */
    public void routeAndRunExperts(Experts experts, RouterSpec spec, long logits, long correction, DeviceBuffer x,
            int tokens, DeviceBuffer out, DeviceRoutes routes) {
        routeAndRunExperts(experts, spec, logits, correction, x, tokens, out, routes, planInSelect);
    }

    /** {@link #routeAndRunExperts}, the one-token plan written by the selection or not (tests of both). */
    void routeAndRunExperts(Experts experts, RouterSpec spec, long logits, long correction, DeviceBuffer x,
            int tokens, DeviceBuffer out, DeviceRoutes routes, boolean planInSelect) {
        int k = spec.topK();
        if ((long) tokens * k > DEVICE_ROUTED_PAIRS) {
            throw new IllegalArgumentException(tokens + " tokens of top-" + k + " exceed the " + DEVICE_ROUTED_PAIRS
                    + " pairs a layer routes on the device");
        }
        CudaExperts cuda = (CudaExperts) experts;
        CudaExperts.DevicePlan plan = tokens == 1 && planInSelect
                ? cuda.devicePlan(tokens, k, spec.weightOnInput(), routes) : null;
        select(logits, spec, correction, tokens, routes, plan);
        cuda.enqueuePlanned(x, tokens, k, spec.weightOnInput(), out, routes, stream, expertsEarly(tokens), plan);
    }

    /**
     * Whether a one-token pass's selection also writes its routing plan (moe_router_select's {@code plan}), so that
     * the experts' first GEMM follows it with no plan kernel between: {@code -Dmoe4j.cuda.planInSelect}, default
     * true (false: the plan kernel, as for batches). H200, gpt-oss-20b shapes, 24 layers, the decode step replayed
     * alone, three rounds in one call: 1969-1970 us with the plan kernel (and the selection launching it early),
     * 1919-1921 without.
     */
    private final boolean planInSelect = Boolean.parseBoolean(System.getProperty("moe4j.cuda.planInSelect", "true"));

    /**
     * Only the selection of {@link #routeAndRunExperts}: the choices land in {@code routes} and are read back with
     * {@link #readChoices} (tests of the device selection against the host rule).
     */
    public void selectExperts(long logits, RouterSpec spec, long correction, int tokens, DeviceRoutes routes) {
        select(logits, spec, correction, tokens, routes, null);
    }

    /** {@link #selectExperts}, also writing {@code plan} (one token) when not null. */
    private void select(long logits, RouterSpec spec, long correction, int tokens, DeviceRoutes routes,
            CudaExperts.DevicePlan plan) {
        DeviceBuffer[] choices = CudaExperts.choices(routes, tokens, spec.topK());
        KernelCache.Kernel select = engine.kernels().get("router.cu", "moe_router_select",
                CudaRouter.selectDefines(spec));
        // the logits come with the router's bias added (model_router_logits), in one slice
        CudaRouter.launchSelect(select, stream, spec, logits, 1, 0L, correction, choices[0].pointer(),
                choices[1].pointer(), tokens, early("select", tokens), plan);
    }

    /** Waits for this stream, then reads the choices {@link #selectExperts} wrote: ids [tokens, k], then weights. */
    public io.moe4j.routing.Routing readChoices(DeviceRoutes routes, RouterSpec spec, int tokens) {
        int n = tokens * spec.topK();
        DeviceBuffer[] choices = CudaExperts.choices(routes, tokens, spec.topK());
        int[] ids = land(choices[0], 0, 4L * n).toArray(ValueLayout.JAVA_INT);
        float[] weights = land(choices[1], 0, 4L * n).toArray(ValueLayout.JAVA_FLOAT);
        return new io.moe4j.routing.Routing(tokens, spec.topK(), ids, weights, spec.weightOnInput());
    }

    /**
     * Pinned host memory of at least {@code bytes} to fill and {@link #send}: reused by every call, so it must not be
     * filled again before the stream has been waited for (every pass ends with a read that waits).
     */
    public MemorySegment staging(long bytes) {
        if (sending == null || sending.byteSize() < bytes) {
            stream.synchronize();
            if (sending != null) {
                sending.close();
            }
            sending = engine.context().allocatePinned(Math.max(bytes, 1 << 12));
        }
        return sending.segment();
    }

    /** Copies the first {@code bytes} of the {@link #staging} memory to the start of {@code into}, on this stream. */
    public void send(DeviceBuffer into, long bytes) {
        into.copyFromAsync(sending.segment().asSlice(0, bytes), 0, stream);
    }

    private interface Args {
        void fill(KernelArgs args);
    }

    private void launch(String kernel, int gridX, int gridY, int threads, Args fill) {
        launch(SOURCE, kernel, List.of(), gridX, gridY, 1, threads, 0, fill);
    }

    /**
     * A kernel of {@code source} compiled with {@code defines}, launched on this stream with {@code sharedBytes} of
     * dynamic shared memory, up to what {@link KernelCache} allowed the function when it loaded it (all that the
     * device lets a block have beside the kernel's static shared memory), so a launch changes no function attribute:
     * launches of one function from several streams cannot lower its limit under one another.
     */
    private void launch(String source, String kernel, List<String> defines, int gridX, int gridY, int gridZ,
            int threads, int sharedBytes, Args fill) {
        launch(engine.kernels().get(source, kernel, defines), kernel, gridX, gridY, gridZ, threads, sharedBytes, fill);
    }

    /** {@link #launch(String, String, List, int, int, int, int, int, Args)} of a kernel already looked up. */
    private void launch(KernelCache.Kernel k, String kernel, int gridX, int gridY, int gridZ, int threads,
            int sharedBytes, Args fill) {
        if (sharedBytes > k.sharedLimit()) {
            throw new IllegalArgumentException(kernel + " needs " + sharedBytes + " bytes of shared memory a block;"
                    + " this device allows " + k.sharedLimit());
        }
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena);
            fill.fill(args);
            k.function().launch(gridX, gridY, gridZ, threads, 1, 1, sharedBytes, stream, args);
        }
    }

    @Override
    public void close() {
        if (expertsWorkspace != null) {
            expertsWorkspace.close();
        }
        if (sampleGrids != null) {
            sampleGrids.close();
        }
        stream.close();
        if (landing != null) {
            landing.close();
        }
        if (sending != null) {
            sending.close();
        }
    }
}
