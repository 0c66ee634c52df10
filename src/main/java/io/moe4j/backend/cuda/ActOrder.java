package io.moe4j.backend.cuda;

import io.moe4j.quant.BlockScales;
import io.moe4j.quant.ExpertMatrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Act-order (GPTQ g_idx) columns sorted by group, per expert, so that the kernels see contiguous groups: the codes
 * are reordered once on upload and each GEMM input row is written in the same order (device column k holds input
 * column {@code order[e][k]}). The dot product is the same sum in another order. It applies when the sorted groups
 * are the regular {@code blockCols}-wide blocks, as GPTQ's are.
 *
 * @param order per expert, the input column of each device column
 */
record ActOrder(int[][] order) {

    static String unsupportedReason(ExpertMatrix m) {
        BlockScales s = m.blockScales();
        if (s == null) {
            return "act-order without group scales";
        }
        if (s.blockCols() % 32 != 0) {
            return "act-order groups of " + s.blockCols() + " columns (the CUDA kernels take multiples of 32)";
        }
        for (int e = 0; e < m.experts(); e++) {
            int[] o = sortedColumns(m.groupIndex()[e]);
            for (int k = 0; k < o.length; k++) {
                if (m.groupIndex()[e][o[k]] != k / s.blockCols()) {
                    return "act-order groups of unequal sizes (expert " + e + ")";
                }
            }
        }
        return null;
    }

    static ActOrder of(ExpertMatrix m) {
        int[][] order = new int[m.experts()][];
        for (int e = 0; e < m.experts(); e++) {
            order[e] = sortedColumns(m.groupIndex()[e]);
        }
        return new ActOrder(order);
    }

    /** Columns ordered by group, stably (ties keep their column order). */
    static int[] sortedColumns(int[] groupOfColumn) {
        Integer[] cols = new Integer[groupOfColumn.length];
        for (int i = 0; i < cols.length; i++) {
            cols[i] = i;
        }
        Arrays.sort(cols, (a, b) -> Integer.compare(groupOfColumn[a], groupOfColumn[b]));
        return Arrays.stream(cols).mapToInt(Integer::intValue).toArray();
    }

    int[] flatOrder() {
        int cols = order[0].length;
        int[] flat = new int[order.length * cols];
        for (int e = 0; e < order.length; e++) {
            System.arraycopy(order[e], 0, flat, e * cols, cols);
        }
        return flat;
    }

    /** The codes of every row with device column k taking input column order[e][k]; 4, 8, 16 or 32-bit codes. */
    MemorySegment permuteCodes(Arena arena, ExpertMatrix m) {
        int bits = m.codes().bits();
        long rowBytes = m.rowBytes();
        MemorySegment src = m.data();
        MemorySegment dst = arena.allocate(src.byteSize(), 16);
        for (int e = 0; e < m.experts(); e++) {
            int[] o = order[e];
            for (int r = 0; r < m.rows(); r++) {
                long base = m.rowOffset(e, r);
                if (bits == 4) {
                    for (long b = 0; b < rowBytes; b++) {
                        int lo = nibble(src, base, o[(int) (2 * b)]);
                        int hi = 2 * b + 1 < m.cols() ? nibble(src, base, o[(int) (2 * b + 1)]) : 0;
                        dst.set(ValueLayout.JAVA_BYTE, base + b, (byte) (lo | hi << 4));
                    }
                } else {
                    int width = bits / 8;
                    for (int k = 0; k < m.cols(); k++) {
                        MemorySegment.copy(src, base + (long) o[k] * width, dst, base + (long) k * width, width);
                    }
                }
            }
        }
        return dst;
    }

    private static int nibble(MemorySegment s, long rowBase, int col) {
        int b = s.get(ValueLayout.JAVA_BYTE, rowBase + (col >> 1)) & 0xFF;
        return (col & 1) == 0 ? b & 0xF : b >>> 4;
    }
}
