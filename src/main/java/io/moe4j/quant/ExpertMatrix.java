package io.moe4j.quant;

import java.lang.foreign.MemorySegment;

/**
 * A stack of {@code experts} weight matrices of {@code rows × cols} (y = W·x: rows are output features, cols
 * input features), in checkpoint precision. Element (e, r, c) is
 * <pre>
 *   (code(e, r, c) − zero(e, r, g)) · blockScale(e, r, g) · shardScale(e, r / shardRows)
 * </pre>
 * where g is the column's group: c / blockCols, or the act-order group index of row r's part for act-order
 * checkpoints. Missing parts (no block scales, no zero points, no shard scales) are the identity.
 *
 * <p>Act-order: GPTQ quantizes each projection on its own, so the gate and up halves of w13 may carry different
 * column → group maps. {@code groupIndex} then holds {@code parts} maps per expert, entry {@code e·parts + k} for
 * rows [k·rows/parts, (k+1)·rows/parts) of expert e; with one map per expert (the usual case) every row shares it.
 *
 * @param codes       element storage; codes of row r of expert e start at byte {@code (e·rows + r)·rowBytes()}
 * @param shardScales one multiplier per (expert, shard of {@code shardRows} rows), e.g. the separate per-tensor
 *                    scales of the gate and up halves of w13, or 1/global scale of NVFP4; null for none
 * @param zeroPoints  integer zero points on the block-scale grid, stored as one signed byte each; null for none
 * @param groupIndex  act-order column → group maps, {@link #groupParts()} per expert (see above); null when groups
 *                    are contiguous
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
        if (groupIndex != null) {
            if (experts == 0 || groupIndex.length == 0 || groupIndex.length % experts != 0
                    || rows % (groupIndex.length / experts) != 0) {
                throw new IllegalArgumentException(groupIndex.length + " act-order group maps do not split " + experts
                        + " experts of " + rows + " rows into equal parts");
            }
            for (int[] g : groupIndex) {
                if (g.length != cols) {
                    throw new IllegalArgumentException("an act-order group map of " + g.length + " columns for "
                            + cols + " columns");
                }
            }
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

    /** Act-order group maps per expert: 1, or 2 when w13's gate and up halves have their own; 1 without act-order. */
    public int groupParts() {
        return groupIndex == null ? 1 : groupIndex.length / experts;
    }

    /** Group of column c in row r of expert e (for block scales and zero points). */
    public int group(int expert, int row, int col) {
        if (groupIndex != null) {
            int parts = groupIndex.length / experts;
            return groupIndex[expert * parts + row / (rows / parts)][col];
        }
        return blockScales == null ? 0 : col / blockScales.blockCols();
    }

    /**
     * The same data seen as {@code experts·parts} experts of {@code rows/parts} rows, each part of a matrix with its
     * own act-order map becoming an expert of its own (local expert e's part k is expert e·parts + k): row r of part
     * k is row k·rows/parts + r of e, at the same bytes. Lets a backend whose kernels take one column order per
     * expert run such a matrix as two GEMMs. Returns this matrix when it has one map per expert.
     */
    public ExpertMatrix partsAsExperts() {
        int parts = groupParts();
        if (parts == 1) {
            return this;
        }
        int partRows = rows / parts;
        BlockScales bs = blockScales;
        if (bs != null) {
            if (partRows % bs.blockRows() != 0) {
                throw new IllegalArgumentException("block scales of " + bs.blockRows() + " rows straddle the "
                        + partRows + "-row parts of an act-order matrix");
            }
            bs = new BlockScales(bs.type(), bs.data(), bs.blockRows(), bs.blockCols(), partRows / bs.blockRows(),
                    bs.colBlocks());
        }
        if (shardScales != null && partRows % shardRows != 0) {
            throw new IllegalArgumentException("shard scales of " + shardRows + " rows straddle the " + partRows
                    + "-row parts of an act-order matrix");
        }
        return new ExpertMatrix(experts * parts, partRows, cols, codes, data, bs, zeroPoints, shardScales, shardRows,
                groupIndex);
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
