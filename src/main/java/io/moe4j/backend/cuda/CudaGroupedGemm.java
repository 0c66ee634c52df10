package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaException;
import io.moe4j.backend.cuda.driver.CudaFunction;
import io.moe4j.backend.cuda.driver.CudaModule;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Grouped expert GEMV on packed weights: upload an expert stack once ({@link #upload}), then compute
 * {@code out[p, n] = sum_k W[e_p, n, k] * x[r_p, k]} for a batch of routed pairs (e_p, r_p) with float32
 * activations and float32 accumulation ({@link #forward}). One kernel per {@link WeightFormat}, compiled by NVRTC
 * for the device on first use and cached on disk.
 *
 * <p>Thread-safe: launches keep no state in fields (kernel arguments live in a per-call arena). Calls must come
 * from threads where the context is current ({@link CudaContext#makeCurrent()}).
 */
public final class CudaGroupedGemm implements AutoCloseable {
    /** Shared memory a block gets without opting in. */
    private static final int DEFAULT_SHARED_LIMIT = 48 * 1024;
    /** Grid y carries the pairs and is limited to 65535 by the hardware; larger batches go in slices. */
    private static final int MAX_PAIRS_PER_LAUNCH = 65535;

    private final CudaContext context;
    private final KernelCompiler compiler;
    private final int rowsPerWarp;
    private final int warpsPerBlock;
    private final Map<WeightFormat, Kernel> kernels = new EnumMap<>(WeightFormat.class);

    private record Kernel(CudaModule module, CudaFunction function, int sharedLimit) {
    }

    private CudaGroupedGemm(CudaContext context, KernelCompiler compiler, int rowsPerWarp, int warpsPerBlock) {
        this.context = context;
        this.compiler = compiler;
        this.rowsPerWarp = rowsPerWarp;
        this.warpsPerBlock = warpsPerBlock;
    }

    /** The default tiling: 4 rows a warp, 8 warps a block. */
    public static CudaGroupedGemm create(CudaContext context) {
        return create(context, KernelCompiler.forDevice(context.device()), 4, 8);
    }

    /** A variant with another tiling, for tuning: rows each warp computes and warps per block. */
    public static CudaGroupedGemm create(CudaContext context, KernelCompiler compiler, int rowsPerWarp,
            int warpsPerBlock) {
        if (rowsPerWarp < 1 || rowsPerWarp > 32 || warpsPerBlock < 1 || warpsPerBlock > 32) {
            throw new IllegalArgumentException("rows per warp in [1, 32], warps per block in [1, 32]");
        }
        return new CudaGroupedGemm(context, compiler, rowsPerWarp, warpsPerBlock);
    }

    public int rowsPerBlock() {
        return rowsPerWarp * warpsPerBlock;
    }

    /**
     * Copies a stack to the device in the kernels' layout: code rows padded with zeros to whole 16-byte chunks
     * (with one strided copy, no host staging), scales as they are.
     */
    public DeviceExperts upload(PackedExperts host) {
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
            return new DeviceExperts(host, codes, scales);
        } catch (RuntimeException e) {
            codes.close();
            if (scales != null) {
                scales.close();
            }
            throw e;
        }
    }

    /**
     * Enqueues {@code out[p, n] = sum_k W[e_p, n, k] * x[r_p, k]} for the {@code pairs} packed in {@code routes}
     * (see {@link Routes#pack}, which validates them). {@code x} is float32 [rows, K]; {@code out} float32
     * [pairs, N]. Sizes are checked against the buffers here, the route indices were checked when packed.
     */
    public void forward(DeviceExperts w, DeviceBuffer x, DeviceBuffer routes, int pairs, DeviceBuffer out,
            CudaStream stream) {
        if (pairs <= 0) {
            return;
        }
        int n = w.rows();
        int k = w.cols();
        require(routes.byteSize() >= Routes.bytes(pairs), "routes buffer holds fewer than " + pairs + " pairs");
        require(out.byteSize() >= 4L * pairs * n, "out buffer smaller than " + pairs + " x " + n + " floats");
        require(x.byteSize() >= 4L * k, "x buffer smaller than one row of " + k + " floats");
        Kernel kernel = kernel(w.format());
        int chunks = w.chunksPerRow();
        long shared = 4L * chunks * w.format().elementsPerChunk();
        require(shared <= kernel.sharedLimit(), "K = " + k + " needs " + shared + " bytes of shared memory for x;"
                + " this device allows " + kernel.sharedLimit());
        int gridX = Math.ceilDiv(n, rowsPerBlock());
        for (int first = 0; first < pairs; first += MAX_PAIRS_PER_LAUNCH) {
            int count = Math.min(MAX_PAIRS_PER_LAUNCH, pairs - first);
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = new KernelArgs(arena).pointer(w.codes());
                if (w.scales() != null) {
                    args.pointer(w.scales());
                }
                args.pointer(x).pointer(routes.pointer() + Routes.bytes(first))
                        .pointer(out.pointer() + 4L * first * n).i32(n).i32(k);
                if (w.format() == WeightFormat.INT4) {
                    int groupsPerRow = k / w.group();
                    int groupChunks = w.group() % 32 == 0 ? w.group() / 32 : chunks; // group == K: one per row
                    args.i32(groupsPerRow).i32(groupChunks);
                }
                kernel.function().launch(gridX, count, 1, 32 * warpsPerBlock, 1, 1, (int) shared, stream, args);
            }
        }
    }

    /** Resource use of the compiled kernel of {@code format} (registers, spills), for logs and benchmarks. */
    public String resources(WeightFormat format) {
        return kernel(format).function().resources();
    }

    private synchronized Kernel kernel(WeightFormat format) {
        Kernel kernel = kernels.get(format);
        if (kernel == null) {
            List<String> defines = new ArrayList<>();
            defines.add("-DMOE4J_ROWS=" + rowsPerWarp);
            defines.add("-DMOE4J_WARPS=" + warpsPerBlock);
            byte[] cubin = compiler.compile(KernelSource.resource(format.kernelFile(), defines));
            CudaModule module = context.loadModule(cubin);
            CudaFunction function = module.function(format.kernelName());
            int limit = DEFAULT_SHARED_LIMIT;
            int optIn = context.device().maxSharedPerBlockOptIn() - function.attribute(
                    io.moe4j.backend.cuda.driver.CudaDriver.FUNC_SHARED_SIZE_BYTES);
            if (optIn > limit) {
                try {
                    function.setMaxDynamicSharedBytes(optIn);
                    limit = optIn;
                } catch (CudaException e) {
                    module.close();
                    throw e;
                }
            }
            kernel = new Kernel(module, function, limit);
            kernels.put(format, kernel);
        }
        return kernel;
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
