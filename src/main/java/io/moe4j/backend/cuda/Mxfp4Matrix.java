package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ScaleType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * An OCP MXFP4 stack (E2M1 codes, one E8M0 scale per 32 along K, nothing else) in the tensor-core fragment order
 * of gemv_mxfp4_mma.cu, which both the decode GEMV and the prefill tile GEMM (gemm_mxfp4_tile.cu) read; and per
 * row the largest E8M0 exponent, [E][row tiles · 16] bytes (padding rows 127), by which the tile GEMM pre-scales
 * its f16 weights.
 */
record Mxfp4Matrix(Mxfp4Tiles experts, DeviceBuffer rowExponents) implements DeviceMatrix {

    /** Whether {@code m} is plain OCP MXFP4 that the tensor-core kernels take as is. */
    static boolean fits(ExpertMatrix m) {
        BlockScales s = m.blockScales();
        return m.codes() == CodeType.FP4_E2M1 && s != null && s.type() == ScaleType.E8M0 && s.blockRows() == 1
                && s.blockCols() == 32 && m.cols() % 32 == 0 && m.zeroPoints() == null && m.groupIndex() == null
                && unitShards(m.shardScales()) && s.data().byteSize() == (long) m.experts() * m.rows() * (m.cols() / 32);
    }

    private static boolean unitShards(float[] shards) {
        if (shards == null) {
            return true;
        }
        for (float f : shards) {
            if (f != 1f) {
                return false;
            }
        }
        return true;
    }

    static Mxfp4Matrix upload(io.moe4j.backend.cuda.driver.CudaContext ctx, Mxfp4Gemv gemv, ExpertMatrix m) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment scales = nativeCopy(arena, m.blockScales().data());
            Mxfp4Stack host = new Mxfp4Stack(m.experts(), m.rows(), m.cols(), nativeCopy(arena, m.data()), scales);
            int padded = 16 * Math.ceilDiv(m.rows(), 16);
            int blocks = m.cols() / 32;
            MemorySegment exps = arena.allocate((long) m.experts() * padded);
            exps.fill((byte) 127);
            for (int e = 0; e < m.experts(); e++) {
                for (int r = 0; r < m.rows(); r++) {
                    long at = ((long) e * m.rows() + r) * blocks;
                    int max = 0;
                    for (int b = 0; b < blocks; b++) {
                        max = Math.max(max, scales.get(java.lang.foreign.ValueLayout.JAVA_BYTE, at + b) & 0xFF);
                    }
                    exps.set(java.lang.foreign.ValueLayout.JAVA_BYTE, (long) e * padded + r, (byte) max);
                }
            }
            Mxfp4Tiles experts = gemv.upload(host);
            try {
                DeviceBuffer rowExponents = ctx.allocate(exps.byteSize());
                rowExponents.copyFrom(exps);
                return new Mxfp4Matrix(experts, rowExponents);
            } catch (RuntimeException e) {
                experts.close();
                throw e;
            }
        }
    }

    /** The driver reads host memory directly: heap segments are copied off-heap first (mapped ones are not). */
    static MemorySegment nativeCopy(Arena arena, MemorySegment s) {
        if (s.isNative()) {
            return s;
        }
        MemorySegment copy = arena.allocate(s.byteSize(), 16);
        copy.copyFrom(s);
        return copy;
    }

    @Override
    public int rows() {
        return experts.rows();
    }

    @Override
    public int cols() {
        return experts.cols();
    }

    @Override
    public DeviceBuffer columnOrder() {
        return null;
    }

    /** 16-row tiles. */
    int rowTiles() {
        return experts.rowTiles();
    }

    /** 64-element block pairs along K. */
    int blockPairs() {
        return experts.blockPairs();
    }

    @Override
    public String kernels() {
        return "MXFP4 on tensor cores (mma.sync GEMV for decode, tile GEMM for prefill)";
    }

    @Override
    public void close() {
        try {
            experts.close();
        } finally {
            rowExponents.close();
        }
    }
}
