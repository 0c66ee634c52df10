package io.moe4j.quant;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Several one-matrix {@link ExpertMatrix}es of one input width stacked by rows into one, in the order given, each
 * element keeping its value: codes, block scales and zero points concatenated, shard scales spread over shards that
 * tile every part. The linears that read the same input (attention's q, k and v) then run as one GEMM over one
 * prepared input, whatever their format.
 */
public final class RowStack {
    private RowStack() {
    }

    /** Why {@code parts} cannot stack, or null when {@link #of} takes them. */
    public static String unsupportedReason(List<ExpertMatrix> parts) {
        ExpertMatrix first = parts.getFirst();
        BlockScales fs = first.blockScales();
        for (int i = 0; i < parts.size(); i++) {
            ExpertMatrix p = parts.get(i);
            if (p.experts() != 1) {
                return "a stack of " + p.experts() + " experts";
            }
            if (p.cols() != first.cols() || p.codes() != first.codes()) {
                return "different input widths or code types";
            }
            if (p.groupIndex() != null) {
                return "act-order columns";
            }
            if ((p.zeroPoints() == null) != (first.zeroPoints() == null)) {
                return "zero points in some parts only";
            }
            BlockScales s = p.blockScales();
            if ((s == null) != (fs == null)) {
                return "block scales in some parts only";
            }
            if (s != null) {
                if (s.type() != fs.type() || s.blockRows() != fs.blockRows() || s.blockCols() != fs.blockCols()
                        || s.colBlocks() != fs.colBlocks()) {
                    return "different block-scale grids";
                }
                if (i < parts.size() - 1 && p.rows() % s.blockRows() != 0) {
                    return "block scales of " + s.blockRows() + " rows straddling parts of " + p.rows() + " rows";
                }
            }
        }
        return null;
    }

    /** The stacked matrix, its data allocated in {@code arena}; fails when {@link #unsupportedReason} says why. */
    public static ExpertMatrix of(Arena arena, List<ExpertMatrix> parts) {
        String reason = unsupportedReason(parts);
        if (reason != null) {
            throw new IllegalArgumentException("these matrices do not stack by rows: " + reason);
        }
        ExpertMatrix first = parts.getFirst();
        int rows = parts.stream().mapToInt(ExpertMatrix::rows).sum();
        MemorySegment codes = concat(arena, parts.stream().map(ExpertMatrix::data).toList());
        BlockScales scales = null;
        MemorySegment zeros = null;
        BlockScales fs = first.blockScales();
        if (fs != null) {
            int rowBlocks = parts.stream().mapToInt(p -> p.blockScales().rowBlocks()).sum();
            MemorySegment data = concat(arena, parts.stream().map(p -> oneGrid(p.blockScales())).toList());
            scales = new BlockScales(fs.type(), data, fs.blockRows(), fs.blockCols(), rowBlocks, fs.colBlocks());
            if (first.zeroPoints() != null) {
                zeros = concat(arena, parts.stream().map(p -> p.zeroPoints().asSlice(0,
                        (long) p.blockScales().rowBlocks() * p.blockScales().colBlocks())).toList());
            }
        }
        float[] shard = null;
        int shardRows = 0;
        if (parts.stream().anyMatch(p -> p.shardScales() != null)) {
            for (ExpertMatrix p : parts) {
                shardRows = gcd(shardRows, p.rows());
                if (p.shardScales() != null) {
                    shardRows = gcd(shardRows, p.shardRows());
                }
            }
            shard = new float[rows / shardRows];
            int at = 0;
            for (ExpertMatrix p : parts) {
                for (int r = 0; r < p.rows(); r += shardRows) {
                    shard[at++] = p.shardScale(0, r);
                }
            }
        }
        return new ExpertMatrix(1, rows, first.cols(), first.codes(), codes, scales, zeros, shard, shardRows, null);
    }

    /** The one expert's grid of a one-matrix stack's block scales. */
    private static MemorySegment oneGrid(BlockScales s) {
        return s.data().asSlice(0, (long) s.rowBlocks() * s.colBlocks() * s.type().bytes());
    }

    private static MemorySegment concat(Arena arena, List<MemorySegment> parts) {
        long bytes = parts.stream().mapToLong(MemorySegment::byteSize).sum();
        MemorySegment all = arena.allocate(Math.max(bytes, 1), 64).asSlice(0, bytes);
        long at = 0;
        for (MemorySegment p : parts) {
            MemorySegment.copy(p, 0, all, at, p.byteSize());
            at += p.byteSize();
        }
        return all;
    }

    private static int gcd(int a, int b) {
        while (b != 0) {
            int t = a % b;
            a = b;
            b = t;
        }
        return a;
    }
}
