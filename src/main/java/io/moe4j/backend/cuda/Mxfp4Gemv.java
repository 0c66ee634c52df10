package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The grouped MXFP4 GEMV on tensor cores: upload an expert stack once in fragment order ({@link #upload}), then
 * compute {@code out[p, n] = sum_k W[e_p, n, k] * x[r_p, k]} for a batch of routed pairs (e_p, r_p) with float32
 * activations and float32 accumulation ({@link #forward}; mma.sync m16n8k16 on f16 parts, so sm_80 or newer).
 * Decode batches run on it; prefill batches take the tile GEMMs, which read the same layout. Kernels are CUDA C
 * resources compiled by NVRTC for the device on first use and cached on disk.
 *
 * <p>Thread-safe: launches keep no per-call state in fields (kernel arguments live in a per-call arena). Calls
 * must come from threads where the context is current ({@link CudaContext#makeCurrent()}).
 */
public final class Mxfp4Gemv implements AutoCloseable {
    /** Grid y carries the pairs and is limited to 65535 by the hardware; larger batches go in slices. */
    private static final int MAX_PAIRS_PER_LAUNCH = 65535;
    /** Raw MXFP4 bytes staged on the device per repack launch during upload. */
    private static final long REPACK_STAGING_BYTES = 64L << 20;
    private static final String MMA_FILE = "gemv_mxfp4_mma.cu";

    private final CudaContext context;
    private final KernelCache kernels;
    private final GemvTuning tuning;

    private Mxfp4Gemv(CudaContext context, KernelCompiler compiler, GemvTuning tuning) {
        this.context = context;
        this.kernels = new KernelCache(context, compiler);
        this.tuning = tuning;
    }

    public static Mxfp4Gemv create(CudaContext context) {
        return create(context, KernelCompiler.forDevice(context.device()), GemvTuning.defaults());
    }

    /** With a given tuning, on a device with mma.sync f16 (compute capability 8.0 or newer). */
    public static Mxfp4Gemv create(CudaContext context, KernelCompiler compiler, GemvTuning tuning) {
        if (context.device().major() < 8) {
            throw new IllegalStateException("the MXFP4 tensor-core GEMV needs compute capability 8.0+; "
                    + context.device().name() + " is " + context.device().major() + "." + context.device().minor());
        }
        return new Mxfp4Gemv(context, compiler, tuning);
    }

    public GemvTuning tuning() {
        return tuning;
    }

    /**
     * Copies a stack to the device, rearranged there into fragment order (in slices of at most 64 MiB of raw bytes,
     * staged through two device buffers). Scales keep their bytes, in the tiles' order.
     */
    public Mxfp4Tiles upload(Mxfp4Stack host) {
        int n = host.rows();
        int k = host.cols();
        int tiles = Math.ceilDiv(n, 16);
        int pairs = Math.ceilDiv(k, 64);
        long tiledCodesPerExpert = 512L * tiles * pairs;
        long tiledScalesPerExpert = 32L * tiles * pairs;
        long rawCodesPerExpert = (long) n * k / 2;
        long rawScalesPerExpert = (long) n * k / 32;
        int chunk = (int) Math.max(1, Math.min(host.experts(), REPACK_STAGING_BYTES / rawCodesPerExpert));
        KernelCache.Kernel repack = kernels.get(MMA_FILE, "moe_repack_mxfp4_mma", List.of());
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
            return new Mxfp4Tiles(host, hasSpecialScale(host.scales()), codes, scales);
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

    public void forward(Mxfp4Tiles w, DeviceBuffer x, DeviceBuffer routes, int pairs, DeviceBuffer out,
            CudaStream stream) {
        forward(w, x, routes, 0, pairs, out, stream);
    }

    /**
     * Enqueues {@code out[p, n] = sum_k W[e_p, n, k] * x[r_p, k]} for the pairs {@code firstRoute ..
     * firstRoute + pairs - 1} packed in {@code routes} (see {@link Routes#pack}, which validates them; many route
     * lists may share one buffer). {@code x} is float32 [rows, K]; {@code out} float32 [pairs, N]. Buffer sizes are
     * checked here; the route indices were checked when packed.
     */
    public void forward(Mxfp4Tiles w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
            DeviceBuffer out, CudaStream stream) {
        forward(w, x, routes, firstRoute, pairs, out, false, stream);
    }

    /**
     * As above; {@code routesReady} tells an overlapped launch (see {@link CudaStream#capture(Runnable, boolean)})
     * that the routes were written at least two kernels before this one, so the tensor-core GEMV may read them, and
     * start streaming its weights, before the kernel just before it has finished.
     */
    public void forward(Mxfp4Tiles w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
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
        for (int first = 0; first < pairs; first += MAX_PAIRS_PER_LAUNCH) {
            int count = Math.min(MAX_PAIRS_PER_LAUNCH, pairs - first);
            launchMma(w, x, routes.pointer() + 8 * (firstRoute + first), 0L, count, out.pointer() + 4L * first * n, 1,
                    routesReady, stream);
        }
    }

    /** Pairs of one expert the tensor-core GEMV multiplies together when given pieces ({@link #forwardPieces}). */
    public static final int PAIRS_PER_PIECE = 4;

    /**
     * As {@link #forward(Mxfp4Tiles, DeviceBuffer, DeviceBuffer, long, int, DeviceBuffer, CudaStream)} for an
     * MXFP4 stack in the tensor-core layout, with the pairs (sorted by expert) cut into pieces of at most
     * {@link #PAIRS_PER_PIECE} pairs of one expert, int4 (expert, first pair, count, 0) at {@code pieces}: each block
     * decodes its weights once for a piece's pairs, in the MMA columns a single pair leaves empty. Pair indices are
     * relative to {@code firstRoute}; {@code out} rows follow the pairs.
     */
    public void forwardPieces(Mxfp4Tiles w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
            long pieces, int pieceCount, DeviceBuffer out, CudaStream stream) {
        forwardPieces(w, x, routes, firstRoute, pairs, pieces, pieceCount, out, false, stream);
    }

    /** As above, with {@code routesReady} as in {@link #forward(Mxfp4Tiles, DeviceBuffer, DeviceBuffer, long, int,
     * DeviceBuffer, boolean, CudaStream)} (the pieces come with the routes). */
    public void forwardPieces(Mxfp4Tiles w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
            long pieces, int pieceCount, DeviceBuffer out, boolean routesReady, CudaStream stream) {
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
    public boolean piecesFit(Mxfp4Tiles w) {
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
    private void launchMma(Mxfp4Tiles w, DeviceBuffer x, long routes, long pieces, int blocksY, long out,
            int pairsPerBlock, boolean routesReady, CudaStream stream) {
        GemvTuning t = tuning.resolve(tuning.kSplit() > 0 ? tuning.kSplit()
                : GemvTuning.autoKSplit(w.rowTiles(), blocksY, context.device().multiprocessors()));
        KernelCache.Kernel kernel = mmaKernel(w, t, pairsPerBlock > 1 ? "moe_gemv_mxfp4_mma_pieces" : "moe_gemv_mxfp4_mma");
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
    public String resources(Mxfp4Tiles w, int pairs) {
        int split = tuning.kSplit() > 0 ? tuning.kSplit()
                : GemvTuning.autoKSplit(w.rowTiles(), pairs, context.device().multiprocessors());
        return "k" + split + " " + mmaKernel(w, tuning.resolve(split), "moe_gemv_mxfp4_mma").function().resources();
    }

    private KernelCache.Kernel mmaKernel(Mxfp4Tiles w, GemvTuning resolved, String name) {
        List<String> defines = new ArrayList<>(resolved.mmaDefines());
        if (w.specialScales()) {
            defines.add("-DMOE4J_EXACT_E8M0=1");
        }
        return kernels.get(MMA_FILE, name, defines);
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
    public void close() {
        kernels.close();
    }
}
