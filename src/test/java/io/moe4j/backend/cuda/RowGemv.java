package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import java.lang.foreign.Arena;
import java.util.List;

/**
 * The CUDA-core grouped GEMV on checkpoint rows (gemv_bf16/fp8/int4/mxfp4.cu in the test resources): each warp
 * computes {@code rowsPerWarp} rows with x staged in shared memory, codes decoded in registers. The engine runs
 * MXFP4 on tensor cores ({@link Mxfp4Gemv}) and the other formats on the grouped GEMM of gemm_units.cu; this one
 * stays as a second, simpler implementation to test against and to measure the tensor-core kernel by.
 */
final class RowGemv implements GroupedGemv {
    /** Grid y carries the pairs and is limited to 65535 by the hardware; larger batches go in slices. */
    private static final int MAX_PAIRS_PER_LAUNCH = 65535;

    private final CudaContext context;
    private final KernelCache kernels;
    private final int rowsPerWarp;
    private final int warpsPerBlock;

    /**
     * @param rowsPerWarp   rows each warp computes (x reuse from registers), 1..32
     * @param warpsPerBlock warps per block, 1..32
     */
    RowGemv(CudaContext context, KernelCompiler compiler, int rowsPerWarp, int warpsPerBlock) {
        if (rowsPerWarp < 1 || rowsPerWarp > 32 || warpsPerBlock < 1 || warpsPerBlock > 32) {
            throw new IllegalArgumentException("rows per warp and warps per block must be in [1, 32], got "
                    + rowsPerWarp + ", " + warpsPerBlock);
        }
        this.context = context;
        this.kernels = new KernelCache(context, compiler);
        this.rowsPerWarp = rowsPerWarp;
        this.warpsPerBlock = warpsPerBlock;
    }

    /** 2 rows a warp, 8 warps a block: the fastest on an H100 with the gpt-oss-20b shapes (CudaGemvBench). */
    static RowGemv create(CudaContext context) {
        return new RowGemv(context, KernelCompiler.forDevice(context.device()), 2, 8);
    }

    /** A stack on the device: the checkpoint's rows, each padded with zeros to whole 16-byte chunks. */
    record Rows(RowFormat format, int experts, int rows, int cols, int group, long bytesPerExpert, DeviceBuffer codes,
            DeviceBuffer scales) implements GroupedGemv.Weights {
        int chunksPerRow() {
            return Math.ceilDiv(cols, format.elementsPerChunk());
        }

        @Override
        public void close() {
            try {
                codes.close();
            } finally {
                if (scales != null) {
                    scales.close();
                }
            }
        }
    }

    /** Copies a stack to the device: code rows padded to 16-byte chunks in one strided copy; scales unchanged. */
    @Override
    public Rows upload(RowStack host) {
        RowFormat format = host.format();
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
            return new Rows(format, host.experts(), host.rows(), host.cols(), host.group(), host.bytesPerExpert(),
                    codes, scales);
        } catch (RuntimeException e) {
            codes.close();
            if (scales != null) {
                scales.close();
            }
            throw e;
        }
    }

    @Override
    public void forward(GroupedGemv.Weights weights, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
            DeviceBuffer out, CudaStream stream) {
        Rows w = (Rows) weights;
        if (pairs <= 0) {
            return;
        }
        int n = w.rows();
        int k = w.cols();
        require(firstRoute >= 0 && routes.byteSize() >= Routes.bytes(pairs) + 8 * firstRoute,
                "routes buffer holds fewer than " + (firstRoute + pairs) + " pairs");
        require(out.byteSize() >= 4L * pairs * n, "out buffer smaller than " + pairs + " x " + n + " floats");
        require(x.byteSize() >= 4L * k, "x buffer smaller than one row of " + k + " floats");
        KernelCache.Kernel kernel = kernel(w.format());
        long shared = 4L * w.chunksPerRow() * w.format().elementsPerChunk();
        require(shared <= kernel.sharedLimit(), "K = " + k + " needs " + shared + " bytes of shared memory;"
                + " this device allows " + kernel.sharedLimit());
        int gridX = Math.ceilDiv(n, rowsPerWarp * warpsPerBlock);
        for (int first = 0; first < pairs; first += MAX_PAIRS_PER_LAUNCH) {
            int count = Math.min(MAX_PAIRS_PER_LAUNCH, pairs - first);
            try (Arena arena = Arena.ofConfined()) {
                KernelArgs args = new KernelArgs(arena).pointer(w.codes());
                if (w.scales() != null) {
                    args.pointer(w.scales());
                }
                args.pointer(x).pointer(routes.pointer() + 8 * (firstRoute + first))
                        .pointer(out.pointer() + 4L * first * n).i32(n).i32(k);
                if (w.format() == RowFormat.INT4) {
                    int groupChunks = w.group() % 32 == 0 ? w.group() / 32 : w.chunksPerRow(); // group == K
                    args.i32(k / w.group()).i32(groupChunks);
                }
                kernel.function().launch(gridX, count, 1, 32 * warpsPerBlock, 1, 1, (int) shared, stream, args);
            }
        }
    }

    @Override
    public String describe(GroupedGemv.Weights w) {
        return ((Rows) w).format() + " simt " + rowsPerWarp + "x" + warpsPerBlock;
    }

    @Override
    public String resources(GroupedGemv.Weights w, int pairs) {
        return kernel(((Rows) w).format()).function().resources();
    }

    private KernelCache.Kernel kernel(RowFormat format) {
        return kernels.get(format.kernelFile(), format.kernelName(),
                List.of("-DMOE4J_ROWS=" + rowsPerWarp, "-DMOE4J_WARPS=" + warpsPerBlock));
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
