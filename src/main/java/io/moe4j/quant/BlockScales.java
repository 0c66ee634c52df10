package io.moe4j.quant;

import java.lang.foreign.MemorySegment;

/**
 * Scales over a grid of blocks of a stack of matrices: block (e, rb, cb) covers rows [rb·blockRows, …) and
 * columns [cb·blockCols, …) of expert e's matrix, stored row-major as [E][rowBlocks][colBlocks].
 * Per-channel scales are blockRows = 1, blockCols = cols; MX is 1 × 32; FP8 block is 128 × 128.
 */
public record BlockScales(ScaleType type, MemorySegment data, int blockRows, int blockCols, int rowBlocks, int colBlocks) {

    public BlockScales {
        long need = (long) rowBlocks * colBlocks * type.bytes();
        if (data.byteSize() % need != 0) {
            throw new IllegalArgumentException("scale data of " + data.byteSize() + " bytes is not a whole number of "
                    + rowBlocks + "×" + colBlocks + " " + type + " grids");
        }
    }

    /** Byte offset of the scale of block (e, rb, cb). */
    public long offset(int expert, int rowBlock, int colBlock) {
        return (((long) expert * rowBlocks + rowBlock) * colBlocks + colBlock) * type.bytes();
    }
}
