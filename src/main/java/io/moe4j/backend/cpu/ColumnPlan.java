package io.moe4j.backend.cpu;

import io.moe4j.quant.ExpertMatrix;

import java.util.Arrays;

/**
 * The order in which a packed expert's columns are stored: one segment per block-scale group (all columns when
 * the matrix has no per-column groups), each padded to whole lane words, so that a kernel applies one scale per
 * segment. Act-order checkpoints get their columns sorted by group, which makes each group contiguous; the inputs
 * are gathered through {@link #source} to match.
 *
 * @param slots        columns per lane word
 * @param segmentWords segment g is lane words [segmentWords[g], segmentWords[g+1])
 * @param source       packed column → original column, or −1 for padding (inputs there are 0)
 * @param identity     whether the packed columns are the original ones in order (no padding, no permutation)
 */
record ColumnPlan(int slots, int[] segmentWords, int[] source, boolean identity) {

    int segments() {
        return segmentWords.length - 1;
    }

    int words() {
        return segmentWords[segmentWords.length - 1];
    }

    int paddedColumns() {
        return words() * slots;
    }

    /** The plan of expert e of m for lane words of {@code slots} columns. */
    static ColumnPlan of(ExpertMatrix m, int expert, int slots) {
        int cols = m.cols();
        if (m.blockScales() == null || m.blockScales().colBlocks() == 1) {
            return contiguous(cols, cols, slots);
        }
        int groups = m.blockScales().colBlocks();
        if (m.groupIndex() == null) {
            return contiguous(cols, m.blockScales().blockCols(), slots);
        }
        int[] g = m.groupIndex()[expert];
        int[] count = new int[groups];
        for (int c = 0; c < cols; c++) {
            if (g[c] < 0 || g[c] >= groups) {
                throw new IllegalArgumentException("group index " + g[c] + " of column " + c + " of expert " + expert
                        + " is outside the " + groups + " scale groups");
            }
            count[g[c]]++;
        }
        int[] segmentWords = new int[groups + 1];
        for (int i = 0; i < groups; i++) {
            segmentWords[i + 1] = segmentWords[i] + Math.ceilDiv(count[i], slots);
        }
        int[] source = new int[segmentWords[groups] * slots];
        Arrays.fill(source, -1);
        int[] fill = new int[groups];
        for (int i = 0; i < groups; i++) {
            fill[i] = segmentWords[i] * slots;
        }
        for (int c = 0; c < cols; c++) {
            source[fill[g[c]]++] = c;
        }
        return new ColumnPlan(slots, segmentWords, source, isIdentity(source, cols));
    }

    /** Columns in order, cut into segments of {@code blockCols}, each padded to whole words. */
    static ColumnPlan contiguous(int cols, int blockCols, int slots) {
        int segments = Math.ceilDiv(cols, blockCols);
        int[] segmentWords = new int[segments + 1];
        for (int i = 0; i < segments; i++) {
            int n = Math.min(blockCols, cols - i * blockCols);
            segmentWords[i + 1] = segmentWords[i] + Math.ceilDiv(n, slots);
        }
        int[] source = new int[segmentWords[segments] * slots];
        Arrays.fill(source, -1);
        for (int i = 0; i < segments; i++) {
            int start = i * blockCols;
            int n = Math.min(blockCols, cols - start);
            for (int k = 0; k < n; k++) {
                source[segmentWords[i] * slots + k] = start + k;
            }
        }
        return new ColumnPlan(slots, segmentWords, source, isIdentity(source, cols));
    }

    private static boolean isIdentity(int[] source, int cols) {
        if (source.length != cols) {
            return false;
        }
        for (int i = 0; i < cols; i++) {
            if (source[i] != i) {
                return false;
            }
        }
        return true;
    }

    /** out[outOff + i] = x[off + source[i]] for i < paddedColumns (0 for padding). */
    void gather(float[] x, int off, float[] out, int outOff) {
        if (identity) {
            System.arraycopy(x, off, out, outOff, source.length);
            return;
        }
        for (int i = 0; i < source.length; i++) {
            int s = source[i];
            out[outOff + i] = s < 0 ? 0f : x[off + s];
        }
    }
}
