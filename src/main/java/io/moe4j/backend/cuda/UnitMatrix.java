package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * An expert stack of any {@link CodeType} for the CUDA-core grouped GEMM (gemm_units.cu): the checkpoint's code
 * rows, each padded with zero bytes to whole units of 32 elements, its block scales, zero points and shard scales
 * as they are, and for act-order checkpoints the columns sorted by group (see {@link ActOrder}).
 *
 * @param units     32-element units per row
 * @param unitBytes bytes of a unit's codes (4 x the code's bits)
 * @param defines   the kernel variant for this stack's code and scale types
 */
record UnitMatrix(int experts, int rows, int cols, int units, int unitBytes, List<String> defines, DeviceBuffer codes,
        DeviceBuffer scales, DeviceBuffer zeros, DeviceBuffer shard, DeviceBuffer columnOrder, int rowBlocks,
        int colBlocks, int blockRows, int blockCols, int shards, int shardRows, String description)
        implements DeviceMatrix {

    /** Why a w13 whose gate and up halves carry act-order maps of their own is refused. */
    static final String SPLIT_ACT_ORDER = "act-order gate_proj and up_proj with different weight_g_idx (the CUDA "
            + "kernels take one column order per expert's w13; the emulation and cpu backends run it)";

    /** Why this stack's layout is beyond the kernel, or null when it fits. */
    static String unsupportedReason(ExpertMatrix m) {
        BlockScales s = m.blockScales();
        if (s != null && s.blockCols() != 16 && s.blockCols() % 32 != 0 && s.colBlocks() != 1) {
            return "block scales over " + s.blockCols() + " columns (the CUDA kernels take 16, multiples of 32, or whole rows)";
        }
        if (m.zeroPoints() != null && s == null) {
            return "zero points without block scales";
        }
        if (m.groupParts() != 1) {
            return SPLIT_ACT_ORDER;
        }
        if (m.groupIndex() != null) {
            if (m.codes().bits() == 6) {
                return "act-order " + m.codes() + " codes";
            }
            return ActOrder.unsupportedReason(m);
        }
        return null;
    }

    static UnitMatrix upload(CudaContext ctx, ExpertMatrix m) {
        String reason = unsupportedReason(m);
        if (reason != null) {
            throw new MoeException("the cuda backend cannot run this expert stack: " + reason);
        }
        BlockScales s = m.blockScales();
        boolean half = s != null && s.blockCols() == 16;
        int units = Math.ceilDiv(m.cols(), 32);
        long unitBytes = 4L * m.codes().bits();
        long pitch = units * unitBytes;
        long rowBytes = m.rowBytes();
        long rows = (long) m.experts() * m.rows();
        List<DeviceBuffer> made = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = m.data();
            DeviceBuffer order = null;
            if (m.groupIndex() != null) {
                ActOrder act = ActOrder.of(m);
                host = act.permuteCodes(arena, m);
                order = keep(made, ctx.allocate(4L * m.experts() * m.cols()));
                order.copyFrom(arena.allocateFrom(JAVA_INT, act.flatOrder()));
            }
            host = Mxfp4Matrix.nativeCopy(arena, host);
            DeviceBuffer codes = keep(made, ctx.allocate(rows * pitch));
            if (pitch == rowBytes) {
                codes.copyFrom(host);
            } else {
                codes.fill((byte) 0);
                codes.copyFromPitched(host, rowBytes, pitch, rowBytes, rows);
            }
            DeviceBuffer scales = null;
            DeviceBuffer zeros = null;
            if (s != null) {
                scales = keep(made, ctx.allocate(s.data().byteSize()));
                scales.copyFrom(Mxfp4Matrix.nativeCopy(arena, s.data()));
                if (m.zeroPoints() != null) {
                    zeros = keep(made, ctx.allocate(m.zeroPoints().byteSize()));
                    zeros.copyFrom(Mxfp4Matrix.nativeCopy(arena, m.zeroPoints()));
                }
            }
            DeviceBuffer shard = null;
            if (m.shardScales() != null) {
                shard = keep(made, ctx.allocate(4L * m.shardScales().length));
                shard.copyFrom(arena.allocateFrom(JAVA_FLOAT, m.shardScales()));
            }
            List<String> defines = List.of("-DMOE4J_CODE=" + codeId(m.codes()),
                    "-DMOE4J_SCALE=" + (s == null ? 0 : switch (s.type()) {
                        case E8M0 -> 1;
                        case E4M3 -> 2;
                        case F32 -> 3;
                    }), "-DMOE4J_HALF=" + (half ? 1 : 0), "-DMOE4J_ZERO=" + (zeros != null ? 1 : 0));
            String what = m.codes() + (s == null ? "" : " with " + s.type() + " scales per " + s.blockRows() + "x"
                    + (s.colBlocks() == 1 ? "row" : s.blockCols())) + (zeros != null ? ", zero points" : "")
                    + (shard != null ? ", shard scales" : "") + (order != null ? ", act-order" : "");
            return new UnitMatrix(m.experts(), m.rows(), m.cols(), units, (int) unitBytes, defines, codes, scales,
                    zeros, shard, order, s == null ? 1 : s.rowBlocks(), s == null ? 1 : s.colBlocks(),
                    s == null ? 1 : s.blockRows(), s == null ? 1 : s.blockCols(), m.shards(),
                    m.shardScales() == null ? 1 : m.shardRows(),
                    "CUDA-core grouped GEMM on packed " + what);
        } catch (RuntimeException e) {
            made.forEach(DeviceBuffer::close);
            throw e;
        }
    }

    private static DeviceBuffer keep(List<DeviceBuffer> made, DeviceBuffer b) {
        made.add(b);
        return b;
    }

    /** MOE4J_CODE of gemm_units.cu. */
    static int codeId(CodeType c) {
        return switch (c) {
            case F32 -> 0;
            case BF16 -> 1;
            case F16 -> 2;
            case FP8_E4M3 -> 3;
            case FP8_E5M2 -> 4;
            case FP4_E2M1 -> 5;
            case FP6_E3M2 -> 6;
            case FP6_E2M3 -> 7;
            case INT8 -> 8;
            case INT4 -> 9;
        };
    }

    /** The grouped GEMM (gemm_units.cu) for this stack's code and scale types, taking {@code tb} entries a block. */
    KernelCache.Kernel gemm(CudaEngine engine, CudaTuning tuning, int tb) {
        List<String> all = new ArrayList<>(defines);
        all.add("-DMOE4J_TB=" + tb);
        all.add("-DMOE4J_ROWS=" + tuning.unitsRows());
        all.add("-DMOE4J_WARPS=" + tuning.unitsWarps());
        return engine.kernels().get("gemm_units.cu", "moe_gemm_units", all);
    }

    /**
     * The one-token product (gemm_units.cu's moe_gemv_units: the GEMM's sums at one entry a block, shaped for memory),
     * when {@code tb} is 1 and the tuning takes it; null otherwise. It takes the GEMM's arguments and, last,
     * batchesReady; a warp a row ({@link #rowsPerBlock}) and the GEMM's shared memory at one entry.
     */
    KernelCache.Kernel gemv(CudaEngine engine, CudaTuning tuning, int tb) {
        if (tb != 1 || !tuning.unitsGemv()) {
            return null;
        }
        List<String> all = new ArrayList<>(defines);
        all.add("-DMOE4J_TB=1");
        all.add("-DGEMV_R=" + gemvRowsPerWarp());
        all.add("-DMOE4J_WARPS=" + tuning.unitsWarps());
        return engine.kernels().get("gemm_units.cu", "moe_gemv_units", all);
    }

    /**
     * Rows a warp of {@link #gemv} takes (GEMV_R): the most of 4, 2 and 1 whose chunk of 128 bytes a lane (GEMV_DEPTH
     * units of each row) still holds a whole row, so that one round of loads brings a warp's rows in and the block's
     * staged x serves more rows; 1 when no row fits.
     */
    int gemvRowsPerWarp() {
        for (int r = 4; r > 1; r /= 2) {
            if (unitBytes * r <= 128 && units <= 32 * (128 / (unitBytes * r))) {
                return r;
            }
        }
        return 1;
    }

    /** Rows a block of the GEMM or of {@link #gemv} computes: the grid's x is over them. */
    int rowsPerBlock(CudaTuning tuning, boolean gemv) {
        return (gemv ? gemvRowsPerWarp() : tuning.unitsRows()) * tuning.unitsWarps();
    }

    /**
     * The kernel for blocks of {@code tb} entries and its launch shape: {@link #gemv} where it applies, else
     * {@link #gemm}.
     */
    Product product(CudaEngine engine, CudaTuning tuning, int tb) {
        KernelCache.Kernel gemv = gemv(engine, tuning, tb);
        boolean one = gemv != null;
        return new Product(one ? gemv : gemm(engine, tuning, tb), one, rowsPerBlock(tuning, one), sharedBytes(tb),
                tuning.unitsWarps());
    }

    /**
     * A chosen product of this matrix: the kernel, whether it is the GEMV, rows a block, the block's dynamic shared
     * memory and warps.
     */
    record Product(KernelCache.Kernel kernel, boolean gemv, int rowsPerBlock, long shared, int warps) {
        /**
         * Launches it over {@code rows} rows (grid x) and {@code batches} batches (grid y). {@code args}: the
         * {@link #gemmArgs} and the caller's outPitch, bias, accumulate and tokens; the GEMV's last argument,
         * batchesReady, is added here.
         */
        void launch(int rows, int batches, KernelArgs args, boolean batchesReady, CudaStream stream) {
            if (gemv) {
                args.i32(batchesReady ? 1 : 0);
            }
            kernel.function().launch(Math.ceilDiv(rows, rowsPerBlock), batches, 1, 32 * warps, 1, 1, (int) shared,
                    stream, args);
        }
    }

    /** Dynamic shared memory of a block taking {@code tb} entries: their x rows, 128 bytes a unit an entry. */
    long sharedBytes(int tb) {
        return 128L * tb * units;
    }

    /**
     * Entries a block of the GEMM takes together: {@code wanted} (1 or 8: two sizes keep the variants NVRTC compiles
     * few), halved while its staged x rows (128 bytes a unit an entry) pass the shared memory a block may have.
     */
    int batchSize(CudaEngine engine, CudaTuning tuning, int wanted) {
        int tb = wanted;
        KernelCache.Kernel k = gemm(engine, tuning, 1);
        while (tb > 1 && 128L * tb * units > k.sharedLimit()) {
            tb /= 2;
        }
        return tb;
    }

    /**
     * moe_gemm_units' arguments from the codes through shardRows (x, batches, xRows and out as device addresses); the
     * caller appends outPitch, bias, accumulate and tokens.
     */
    KernelArgs gemmArgs(KernelArgs args, long x, long batches, long xRows, long out) {
        return args.pointer(codes).pointer(CudaExperts.pointerOf(scales)).pointer(CudaExperts.pointerOf(zeros))
                .pointer(CudaExperts.pointerOf(shard)).pointer(x).pointer(batches).pointer(xRows).pointer(out)
                .i32(rows).i32(cols).i32(units).i32(rowBlocks).i32(colBlocks).i32(blockRows).i32(blockCols)
                .i32(shards).i32(shardRows);
    }

    @Override
    public String kernels() {
        return description;
    }

    @Override
    public void close() {
        for (DeviceBuffer b : new DeviceBuffer[] {codes, scales, zeros, shard, columnOrder}) {
            if (b != null) {
                b.close();
            }
        }
    }
}
