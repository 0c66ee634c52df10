package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaDriver;
import io.moe4j.backend.cuda.driver.CudaFunction;
import io.moe4j.backend.cuda.driver.CudaModule;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Grouped expert GEMV on packed weights: upload an expert stack once ({@link #upload}), then compute
 * {@code out[p, n] = sum_k W[e_p, n, k] * x[r_p, k]} for a batch of routed pairs (e_p, r_p) with float32
 * activations and float32 accumulation ({@link #forward}). Kernels are CUDA C resources compiled by NVRTC for the
 * device on first use and cached on disk; MXFP4 runs on tensor cores by default ({@link GemvTuning}).
 *
 * <p>Thread-safe: launches keep no per-call state in fields (kernel arguments live in a per-call arena). Calls
 * must come from threads where the context is current ({@link CudaContext#makeCurrent()}).
 */
public final class CudaGroupedGemm implements AutoCloseable {
    /** Grid y carries the pairs and is limited to 65535 by the hardware; larger batches go in slices. */
    private static final int MAX_PAIRS_PER_LAUNCH = 65535;
    /** Raw MXFP4 bytes staged on the device per repack launch during upload. */
    private static final long REPACK_STAGING_BYTES = 64L << 20;
    private static final String MMA_FILE = "gemv_mxfp4_mma.cu";

    private final CudaContext context;
    private final KernelCompiler compiler;
    private final GemvTuning tuning;
    private final Map<KernelKey, Kernel> kernels = new HashMap<>();

    private record KernelKey(String file, String name, List<String> defines) {
    }

    private record Kernel(CudaModule module, CudaFunction function, int sharedLimit) {
    }

    private CudaGroupedGemm(CudaContext context, KernelCompiler compiler, GemvTuning tuning) {
        this.context = context;
        this.compiler = compiler;
        this.tuning = tuning;
    }

    public static CudaGroupedGemm create(CudaContext context) {
        return create(context, KernelCompiler.forDevice(context.device()), GemvTuning.defaults());
    }

    /** With a given tuning; tensor cores for MXFP4 are used only where the device has mma.sync f16 (sm_80+). */
    public static CudaGroupedGemm create(CudaContext context, KernelCompiler compiler, GemvTuning tuning) {
        boolean mma = tuning.mxfp4TensorCores() && context.device().major() >= 8;
        return new CudaGroupedGemm(context, compiler, tuning.withMxfp4TensorCores(mma));
    }

    public GemvTuning tuning() {
        return tuning;
    }

    /**
     * Copies a stack to the device in its kernel's layout: code rows padded with zeros to whole 16-byte chunks
     * (one strided copy, no host staging), or for MXFP4 on tensor cores, rearranged on the device into fragment
     * order. Scales keep their bytes.
     */
    public DeviceExperts upload(PackedExperts host) {
        if (host.format() == WeightFormat.MXFP4 && tuning.mxfp4TensorCores()) {
            return uploadMxfp4Tiles(host);
        }
        WeightFormat format = host.format();
        long rows = (long) host.experts() * host.rows();
        long rowBytes = format.codeBytesPerRow(host.cols());
        long pitch = 16L * Math.ceilDiv(host.cols(), format.elementsPerChunk());
        DeviceBuffer codes = context.allocate(rows * pitch);
        DeviceBuffer scales = null;
        try {
            if (pitch == rowBytes) {
                codes.copyFrom(host.codes());
            } else {
                codes.fill((byte) 0);
                codes.copyFromPitched(host.codes(), rowBytes, pitch, rowBytes, rows);
            }
            if (host.scales().byteSize() > 0) {
                scales = context.allocate(host.scales().byteSize());
                scales.copyFrom(host.scales());
            }
            return new DeviceExperts(host, DeviceExperts.Layout.ROWS, false, codes, scales);
        } catch (RuntimeException e) {
            closeQuietly(codes, scales);
            throw e;
        }
    }

    private DeviceExperts uploadMxfp4Tiles(PackedExperts host) {
        int n = host.rows();
        int k = host.cols();
        int tiles = Math.ceilDiv(n, 16);
        int pairs = Math.ceilDiv(k, 64);
        long tiledCodesPerExpert = 512L * tiles * pairs;
        long tiledScalesPerExpert = 32L * tiles * pairs;
        long rawCodesPerExpert = (long) n * k / 2;
        long rawScalesPerExpert = (long) n * k / 32;
        int chunk = (int) Math.max(1, Math.min(host.experts(), REPACK_STAGING_BYTES / rawCodesPerExpert));
        Kernel repack = kernel(MMA_FILE, "moe_repack_mxfp4_mma", List.of());
        DeviceBuffer codes = context.allocate(tiledCodesPerExpert * host.experts());
        DeviceBuffer scales = null;
        try (CudaStream stream = context.createStream();
                DeviceBuffer rawCodes = context.allocate(rawCodesPerExpert * chunk);
                DeviceBuffer rawScales = context.allocate(rawScalesPerExpert * chunk)) {
            scales = context.allocate(tiledScalesPerExpert * host.experts());
            for (int first = 0; first < host.experts(); first += chunk) {
                int count = Math.min(chunk, host.experts() - first);
                rawCodes.copyFrom(host.codes().asSlice(first * rawCodesPerExpert, count * rawCodesPerExpert));
                rawScales.copyFrom(host.scales().asSlice(first * rawScalesPerExpert, count * rawScalesPerExpert));
                long threads = 32L * tiles * pairs * count;
                try (Arena arena = Arena.ofConfined()) {
                    KernelArgs args = new KernelArgs(arena).pointer(rawCodes).pointer(rawScales)
                            .pointer(codes.pointer() + first * tiledCodesPerExpert)
                            .pointer(scales.pointer() + first * tiledScalesPerExpert)
                            .i32(count).i32(n).i32(k).i32(tiles).i32(pairs);
                    repack.function().launch((int) Math.ceilDiv(threads, 256), 1, 1, 256, 1, 1, 0, stream, args);
                }
                stream.synchronize(); // the staging buffers are refilled next round
            }
            return new DeviceExperts(host, DeviceExperts.Layout.MXFP4_MMA_TILES, hasSpecialScale(host.scales()), codes,
                    scales);
        } catch (RuntimeException e) {
            closeQuietly(codes, scales);
            throw e;
        }
    }

    /** E8M0 0 (2^-127) or 255 (NaN) anywhere: such stacks get the kernel variant that decodes them exactly. */
    private static boolean hasSpecialScale(MemorySegment scales) {
        for (long i = 0; i < scales.byteSize(); i++) {
            byte b = scales.get(JAVA_BYTE, i);
            if (b == 0 || b == (byte) 0xFF) {
                return true;
            }
        }
        return false;
    }

    public void forward(DeviceExperts w, DeviceBuffer x, DeviceBuffer routes, int pairs, DeviceBuffer out,
            CudaStream stream) {
        forward(w, x, routes, 0, pairs, out, stream);
    }

    /**
     * Enqueues {@code out[p, n] = sum_k W[e_p, n, k] * x[r_p, k]} for the pairs {@code firstRoute ..
     * firstRoute + pairs - 1} packed in {@code routes} (see {@link Routes#pack}, which validates them; many route
     * lists may share one buffer). {@code x} is float32 [rows, K]; {@code out} float32 [pairs, N]. Buffer sizes are
     * checked here; the route indices were checked when packed.
     */
    public void forward(DeviceExperts w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
            DeviceBuffer out, CudaStream stream) {
        forward(w, x, routes, firstRoute, pairs, out, false, stream);
    }

    /**
     * As above; {@code routesReady} tells an overlapped launch (see {@link CudaStream#capture(Runnable, boolean)})
     * that the routes were written at least two kernels before this one, so the tensor-core GEMV may read them, and
     * start streaming its weights, before the kernel just before it has finished.
     */
    public void forward(DeviceExperts w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
            DeviceBuffer out, boolean routesReady, CudaStream stream) {
        if (pairs <= 0) {
            return;
        }
        int n = w.rows();
        int k = w.cols();
        require(firstRoute >= 0 && routes.byteSize() >= Routes.bytes(pairs) + 8 * firstRoute,
                "routes buffer holds fewer than " + (firstRoute + pairs) + " pairs");
        require(out.byteSize() >= 4L * pairs * n, "out buffer smaller than " + pairs + " x " + n + " floats");
        require(x.byteSize() >= 4L * k, "x buffer smaller than one row of " + k + " floats");
        if (w.layout() == DeviceExperts.Layout.MXFP4_MMA_TILES) {
            for (int first = 0; first < pairs; first += MAX_PAIRS_PER_LAUNCH) {
                int count = Math.min(MAX_PAIRS_PER_LAUNCH, pairs - first);
                launchMma(w, x, routes.pointer() + 8 * (firstRoute + first), 0L, count,
                        out.pointer() + 4L * first * n, 1, routesReady, stream);
            }
            return;
        }
        Kernel kernel = simtKernel(w.format());
        long shared = 4L * w.chunksPerRow() * w.format().elementsPerChunk();
        require(shared <= kernel.sharedLimit(), "K = " + k + " needs " + shared + " bytes of shared memory;"
                + " this device allows " + kernel.sharedLimit());
        int gridX = Math.ceilDiv(n, tuning.rowsPerWarp() * tuning.warpsPerBlock());
        for (int first = 0; first < pairs; first += MAX_PAIRS_PER_LAUNCH) {
            int count = Math.min(MAX_PAIRS_PER_LAUNCH, pairs - first);
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = new KernelArgs(arena).pointer(w.codes());
                if (w.scales() != null) {
                    args.pointer(w.scales());
                }
                args.pointer(x).pointer(routes.pointer() + 8 * (firstRoute + first))
                        .pointer(out.pointer() + 4L * first * n).i32(n).i32(k);
                if (w.format() == WeightFormat.INT4) {
                    int groupChunks = w.group() % 32 == 0 ? w.group() / 32 : w.chunksPerRow(); // group == K
                    args.i32(k / w.group()).i32(groupChunks);
                }
                kernel.function().launch(gridX, count, 1, 32 * tuning.warpsPerBlock(), 1, 1, (int) shared, stream,
                        args);
            }
        }
    }

    /** Pairs of one expert the tensor-core GEMV multiplies together when given pieces ({@link #forwardPieces}). */
    public static final int PAIRS_PER_PIECE = 4;

    /**
     * As {@link #forward(DeviceExperts, DeviceBuffer, DeviceBuffer, long, int, DeviceBuffer, CudaStream)} for an
     * MXFP4 stack in the tensor-core layout, with the pairs (sorted by expert) cut into pieces of at most
     * {@link #PAIRS_PER_PIECE} pairs of one expert, int4 (expert, first pair, count, 0) at {@code pieces}: each block
     * decodes its weights once for a piece's pairs, in the MMA columns a single pair leaves empty. Pair indices are
     * relative to {@code firstRoute}; {@code out} rows follow the pairs.
     */
    public void forwardPieces(DeviceExperts w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
            long pieces, int pieceCount, DeviceBuffer out, CudaStream stream) {
        forwardPieces(w, x, routes, firstRoute, pairs, pieces, pieceCount, out, false, stream);
    }

    /** As above, with {@code routesReady} as in {@link #forward(DeviceExperts, DeviceBuffer, DeviceBuffer, long, int,
     * DeviceBuffer, boolean, CudaStream)} (the pieces come with the routes). */
    public void forwardPieces(DeviceExperts w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
            long pieces, int pieceCount, DeviceBuffer out, boolean routesReady, CudaStream stream) {
        require(w.layout() == DeviceExperts.Layout.MXFP4_MMA_TILES,
                "pieces of pairs need an MXFP4 stack in the tensor-core layout, got " + w.layout());
        require(firstRoute >= 0 && routes.byteSize() >= Routes.bytes(pairs) + 8 * firstRoute,
                "routes buffer holds fewer than " + (firstRoute + pairs) + " pairs");
        require(out.byteSize() >= 4L * pairs * w.rows(), "out buffer smaller than " + pairs + " x " + w.rows()
                + " floats");
        require(pieceCount <= pairs, pieceCount + " pieces for " + pairs + " pairs");
        for (int first = 0; first < pieceCount; first += MAX_PAIRS_PER_LAUNCH) {
            int count = Math.min(MAX_PAIRS_PER_LAUNCH, pieceCount - first);
            launchMma(w, x, routes.pointer() + 8 * firstRoute, pieces + 16L * first, count, out.pointer(),
                    PAIRS_PER_PIECE, routesReady, stream);
        }
    }

    /**
     * Whether {@link #forwardPieces} can run on {@code w} here: its blocks hold four pairs' x rows in shared memory
     * (256 bytes per 64 columns each), so very long rows (Mixtral's down projection, K = 14336) do not fit; those
     * take one pair a block. Counts the largest ring any K split resolves to and 4 KiB for static shared memory.
     */
    public boolean piecesFit(DeviceExperts w) {
        if (w.layout() != DeviceExperts.Layout.MXFP4_MMA_TILES) {
            return false;
        }
        long ring = 0;
        for (int split = 1; split <= 8; split *= 2) {
            GemvTuning t = tuning.resolve(tuning.kSplit() > 0 ? tuning.kSplit() : split);
            ring = Math.max(ring, 640L * t.depth() * t.kSplit() * t.tilesPerBlock());
        }
        return 256L * PAIRS_PER_PIECE * (w.blockPairs() + 1) + ring + 4096 <= context.device().maxSharedPerBlockOptIn();
    }

    /**
     * One launch over {@code blocksY} pairs (moe_gemv_mxfp4_mma, {@code pairsPerBlock} 1) or pieces
     * (moe_gemv_mxfp4_mma_pieces), the K split chosen for that many blocks.
     */
    private void launchMma(DeviceExperts w, DeviceBuffer x, long routes, long pieces, int blocksY, long out,
            int pairsPerBlock, boolean routesReady, CudaStream stream) {
        GemvTuning t = tuning.resolve(tuning.kSplit() > 0 ? tuning.kSplit()
                : GemvTuning.autoKSplit(w.rowTiles(), blocksY, context.device().multiprocessors()));
        Kernel kernel = mmaKernel(w, t, pairsPerBlock > 1 ? "moe_gemv_mxfp4_mma_pieces" : "moe_gemv_mxfp4_mma");
        // Two fp16 parts of each pair's x per k16 step (64 bytes x 4 steps a block pair), a zero area, and each
        // warp's ring of `depth` stages of 640 bytes.
        long shared = 256L * pairsPerBlock * (w.blockPairs() + 1) + 640L * t.depth() * t.kSplit() * t.tilesPerBlock();
        require(shared <= kernel.sharedLimit(), "K = " + w.cols() + " needs " + shared
                + " bytes of shared memory; this device allows " + kernel.sharedLimit());
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(w.codes()).pointer(w.scales()).pointer(x).pointer(routes);
            if (pairsPerBlock > 1) {
                args.pointer(pieces);
            }
            args.pointer(out).i32(w.rows()).i32(w.cols()).i32(w.rowTiles()).i32(w.blockPairs())
                    .i32(routesReady ? 1 : 0);
            kernel.function().launch(Math.ceilDiv(w.rowTiles(), t.tilesPerBlock()), blocksY, 1,
                    32 * t.kSplit() * t.tilesPerBlock(), 1, 1, (int) shared, stream, args);
        }
    }

    /** Resource use of the kernel that runs {@code w} for {@code pairs} pairs (registers, spills), for logs. */
    public String resources(DeviceExperts w, int pairs) {
        if (w.layout() != DeviceExperts.Layout.MXFP4_MMA_TILES) {
            return simtKernel(w.format()).function().resources();
        }
        int split = tuning.kSplit() > 0 ? tuning.kSplit()
                : GemvTuning.autoKSplit(w.rowTiles(), pairs, context.device().multiprocessors());
        return "k" + split + " " + mmaKernel(w, tuning.resolve(split), "moe_gemv_mxfp4_mma").function().resources();
    }

    private Kernel simtKernel(WeightFormat format) {
        return kernel(format.kernelFile(), format.kernelName(), tuning.simtDefines());
    }

    private Kernel mmaKernel(DeviceExperts w, GemvTuning resolved, String name) {
        List<String> defines = new ArrayList<>(resolved.mmaDefines());
        if (w.specialScales()) {
            defines.add("-DMOE4J_EXACT_E8M0=1");
        }
        return kernel(MMA_FILE, name, defines);
    }

    private synchronized Kernel kernel(String file, String name, List<String> defines) {
        KernelKey key = new KernelKey(file, name, List.copyOf(defines));
        Kernel kernel = kernels.get(key);
        if (kernel == null) {
            byte[] cubin = compiler.compile(KernelSource.resource(file, defines));
            CudaModule module = context.loadModule(cubin);
            try {
                CudaFunction function = module.function(name, KernelSource.overlapReady(name));
                // Let x take all the shared memory the device allows a block beyond the kernel's static use.
                int limit = context.device().maxSharedPerBlockOptIn()
                        - function.attribute(CudaDriver.FUNC_SHARED_SIZE_BYTES);
                function.setMaxDynamicSharedBytes(limit);
                kernel = new Kernel(module, function, limit);
            } catch (RuntimeException e) {
                module.close();
                throw e;
            }
            kernels.put(key, kernel);
        }
        return kernel;
    }

    private static void closeQuietly(DeviceBuffer a, DeviceBuffer b) {
        try {
            a.close();
        } finally {
            if (b != null) {
                b.close();
            }
        }
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }

    @Override
    public synchronized void close() {
        for (Kernel k : kernels.values()) {
            k.module().close();
        }
        kernels.clear();
    }
}
