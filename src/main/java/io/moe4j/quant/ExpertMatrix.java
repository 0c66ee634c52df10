package io.moe4j.quant;

import java.lang.foreign.MemorySegment;

/**
 * A stack of {@code experts} weight matrices of {@code rows × cols} (y = W·x: rows are output features, cols
 * input features), in checkpoint precision. Element (e, r, c) is
 * <pre>
 *   (code(e, r, c) − zero(e, r, g)) · blockScale(e, r, g) · shardScale(e, r / shardRows)
 * </pre>
 * where g is the column's group: c / blockCols, or {@code groupIndex[e][c]} for act-order checkpoints.
 * Missing parts (no block scales, no zero points, no shard scales) are the identity.
 *
 * @param codes       element storage; codes of row r of expert e start at byte {@code (e·rows + r)·rowBytes()}
 * @param shardScales one multiplier per (expert, shard of {@code shardRows} rows), e.g. the separate per-tensor
 *                    scales of the gate and up halves of w13, or 1/global scale of NVFP4; null for none
 * @param zeroPoints  integer zero points on the block-scale grid, stored as one signed byte each; null for none
 * @param groupIndex  act-order column → group map per expert; null when groups are contiguous
 */
public record ExpertMatrix(int experts, int rows, int cols, CodeType codes, MemorySegment data,
                           BlockScales blockScales, MemorySegment zeroPoints, float[] shardScales, int shardRows,
                           int[][] groupIndex) {

    public ExpertMatrix {
        long need = (long) experts * rows * codes.rowBytes(cols);
        if (data.byteSize() != need) {
            throw new IllegalArgumentException("code data of " + data.byteSize() + " bytes for " + experts + "×" + rows
                    + "×" + cols + " " + codes + " (need " + need + ")");
        }
        if (shardScales != null && (shardRows <= 0 || rows % shardRows != 0
                || shardScales.length != (long) experts * (rows / shardRows))) {
            throw new IllegalArgumentException("shard scales do not tile " + rows + " rows by " + shardRows);
        }
    }

    /** A plain stack: codes only (bf16 / f32 weights). */
    public static ExpertMatrix dense(int experts, int rows, int cols, CodeType codes, MemorySegment data) {
        return new ExpertMatrix(experts, rows, cols, codes, data, null, null, null, 0, null);
    }

    public long rowBytes() {
        return codes.rowBytes(cols);
    }

    public long rowOffset(int expert, int row) {
        return ((long) expert * rows + row) * rowBytes();
    }

    public int shards() {
        return shardScales == null ? 1 : rows / shardRows;
    }

    public float shardScale(int expert, int row) {
        return shardScales == null ? 1f : shardScales[expert * shards() + row / shardRows];
    }

    /** Group of column c of expert e (for block scales and zero points). */
    public int group(int expert, int col) {
        if (groupIndex != null) {
            return groupIndex[expert][col];
        }
        return blockScales == null ? 0 : col / blockScales.blockCols();
    }

    /** Bytes the weights of one expert take, codes and scales together (what a kernel must stream). */
    public long bytesPerExpert() {
        long b = (long) rows * rowBytes();
        if (blockScales != null) {
            b += (long) blockScales.rowBlocks() * blockScales.colBlocks() * blockScales.type().bytes();
        }
        if (zeroPoints != null) {
            b += zeroPoints.byteSize() / experts;
        }
        return b;
    }
}
