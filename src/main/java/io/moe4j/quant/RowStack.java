package io.moe4j.quant;

import io.moe4j.memory.UnzeroedMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * Several one-matrix {@link ExpertMatrix}es of one input width stacked by rows into one, in the order given, each
 * element keeping its value: codes, block scales and zero points concatenated, shard scales spread over shards that
 * tile every part. The linears that read the same input (attention's q, k and v, a shared expert's gate and up) then
 * run as one GEMM over one prepared input, whatever their format.
 */
public final class RowStack {
    private RowStack() {
    }

    /** Why {@code parts} cannot stack, or null when {@link #of} takes them. */
    public static String unsupportedReason(List<ExpertMatrix> parts) {
        return reason(parts, false);
    }

    /** Why {@code parts} cannot stack with their act-order maps, or null when {@link #withColumnOrders} takes them. */
    public static String unsupportedReasonWithColumnOrders(List<ExpertMatrix> parts) {
        return reason(parts, true);
    }

    private static String reason(List<ExpertMatrix> parts, boolean actOrder) {
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
            if (p.groupIndex() != null && !actOrder) {
                return "act-order columns";
            }
            if ((p.groupIndex() == null) != (first.groupIndex() == null)) {
                return "act-order columns in some parts only";
            }
            if (p.groupParts() != 1) {
                return "a part with " + p.groupParts() + " act-order maps";
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
        return stack(arena, parts, false);
    }

    /**
     * {@link #of} for parts that may carry an act-order map each (all or none): the stack takes one map when they
     * agree (one GEMM on every backend), else one per part ({@link ExpertMatrix#groupParts()}), since GPTQ quantizes
     * each projection on its own and gate and up may order their columns differently.
     */
    public static ExpertMatrix withColumnOrders(Arena arena, List<ExpertMatrix> parts) {
        return stack(arena, parts, true);
    }

    private static ExpertMatrix stack(Arena arena, List<ExpertMatrix> parts, boolean actOrder) {
        String reason = reason(parts, actOrder);
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
        return new ExpertMatrix(1, rows, first.cols(), first.codes(), codes, scales, zeros, shard, shardRows,
                columnOrders(parts));
    }

    private static int[][] columnOrders(List<ExpertMatrix> parts) {
        int[][] first = parts.getFirst().groupIndex();
        if (first == null) {
            return null;
        }
        if (parts.stream().allMatch(p -> Arrays.equals(p.groupIndex()[0], first[0]))) {
            return new int[][]{first[0]};
        }
        return parts.stream().map(p -> p.groupIndex()[0]).toArray(int[][]::new);
    }

    /** The one expert's grid of a one-matrix stack's block scales. */
    private static MemorySegment oneGrid(BlockScales s) {
        return s.data().asSlice(0, (long) s.rowBlocks() * s.colBlocks() * s.type().bytes());
    }

    /** The parts' bytes one after another, in memory not zeroed first (every byte is copied over). */
    private static MemorySegment concat(Arena arena, List<MemorySegment> parts) {
        long bytes = parts.stream().mapToLong(MemorySegment::byteSize).sum();
        MemorySegment all = UnzeroedMemory.allocate(arena, Math.max(bytes, 1), 64).asSlice(0, bytes);
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
