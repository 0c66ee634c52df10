package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearWeights;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * Stacks the matrices of linears that read the same input (a gated MLP's gate and up) into one matrix, row blocks of
 * the first then of the next, so a backend runs them as one GEMM: codes, block scales and zero points concatenated
 * (the block grid must tile each part's rows), a shard scale per part, one act-order column order for all (one per
 * part where they differ, see {@link ExpertMatrix#groupParts()}), and one input quantization (static scales: the
 * largest, the seeds' post-load rule).
 */
final class RowStack {
    private RowStack() {
    }

    static ExpertMatrix matrices(String what, List<LinearWeights> parts, Arena arena) {
        ExpertMatrix first = parts.getFirst().weight();
        int rows = 0;
        for (LinearWeights p : parts) {
            ExpertMatrix m = p.weight();
            if (m.codes() != first.codes() || m.cols() != first.cols()
                    || (m.blockScales() == null) != (first.blockScales() == null)
                    || (m.zeroPoints() == null) != (first.zeroPoints() == null)
                    || (m.groupIndex() == null) != (first.groupIndex() == null)) {
                throw new MoeException(what + ": the stacked projections differ in format (" + first.codes() + " × "
                        + first.cols() + " vs " + m.codes() + " × " + m.cols() + ")");
            }
            if (m.groupParts() != 1) {
                throw new MoeException(what + ": a stacked projection has " + m.groupParts() + " act-order maps");
            }
            if (m.rows() != first.rows()) {
                throw new MoeException(what + ": the stacked projections have " + first.rows() + " and " + m.rows()
                        + " rows");
            }
            rows += m.rows();
        }
        MemorySegment data = concat(parts.stream().map(p -> p.weight().data()).toList(), arena);
        BlockScales bs = null;
        if (first.blockScales() != null) {
            BlockScales s0 = first.blockScales();
            int rowBlocks = 0;
            for (LinearWeights p : parts) {
                BlockScales s = p.weight().blockScales();
                if (s.type() != s0.type() || s.blockRows() != s0.blockRows() || s.blockCols() != s0.blockCols()
                        || s.colBlocks() != s0.colBlocks() || p.weight().rows() % s.blockRows() != 0) {
                    throw new MoeException(what + ": the block scales of the stacked projections cannot be stacked ("
                            + p.weight().rows() + " rows in blocks of " + s.blockRows() + ")");
                }
                rowBlocks += s.rowBlocks();
            }
            bs = new BlockScales(s0.type(), concat(parts.stream().map(p -> p.weight().blockScales().data()).toList(),
                    arena), s0.blockRows(), s0.blockCols(), rowBlocks, s0.colBlocks());
        }
        MemorySegment zeros = first.zeroPoints() == null ? null
                : concat(parts.stream().map(p -> p.weight().zeroPoints()).toList(), arena);
        float[] shard = null;
        if (parts.stream().anyMatch(p -> p.weight().shardScales() != null)) {
            shard = new float[parts.size()];
            for (int i = 0; i < shard.length; i++) {
                shard[i] = parts.get(i).weight().shardScale(0, 0);
                if (parts.get(i).weight().shards() != 1) {
                    throw new MoeException(what + ": a stacked projection has " + parts.get(i).weight().shards()
                            + " shard scales, not one");
                }
            }
        }
        return new ExpertMatrix(1, rows, first.cols(), first.codes(), data, bs, zeros, shard,
                shard == null ? 0 : first.rows(), groupIndex(parts));
    }

    /**
     * One act-order map for all parts when they agree (one GEMM on every backend), else one per part: GPTQ
     * quantizes each projection on its own, so gate and up may order their columns differently.
     */
    private static int[][] groupIndex(List<LinearWeights> parts) {
        int[] first = parts.getFirst().weight().groupIndex() == null ? null : parts.getFirst().weight().groupIndex()[0];
        if (first == null || parts.stream().allMatch(p -> Arrays.equals(p.weight().groupIndex()[0], first))) {
            return first == null ? null : new int[][]{first};
        }
        return parts.stream().map(p -> p.weight().groupIndex()[0]).toArray(int[][]::new);
    }

    /** The one input quantization of linears that read the same input. */
    static ActivationQuant input(String what, List<LinearWeights> parts) {
        ActivationQuant q = parts.getFirst().input();
        for (LinearWeights p : parts) {
            ActivationQuant o = p.input();
            if (o.getClass() != q.getClass()) {
                throw new MoeException(what + ": the stacked projections quantize their input differently (" + q
                        + " vs " + o + ")");
            }
            q = switch (q) {
                case ActivationQuant.Fp8Static s -> new ActivationQuant.Fp8Static(
                        new float[]{Math.max(s.scale()[0], ((ActivationQuant.Fp8Static) o).scale()[0])});
                case ActivationQuant.Int8Static s -> {
                    ActivationQuant.Int8Static t = (ActivationQuant.Int8Static) o;
                    if (!Arrays.equals(s.zeroPoint(), t.zeroPoint())) {
                        throw new MoeException(what + ": the stacked projections have different input zero points");
                    }
                    yield new ActivationQuant.Int8Static(new float[]{Math.max(s.scale()[0], t.scale()[0])},
                            s.zeroPoint());
                }
                // The smaller global scale is the larger dequantization step, as CtNvfp4Method takes for w13.
                case ActivationQuant.Nvfp4 n -> new ActivationQuant.Nvfp4(
                        new float[]{Math.min(n.globalScale()[0], ((ActivationQuant.Nvfp4) o).globalScale()[0])});
                default -> {
                    if (!q.equals(o)) {
                        throw new MoeException(what + ": the stacked projections quantize their input differently ("
                                + q + " vs " + o + ")");
                    }
                    yield q;
                }
            };
        }
        return q;
    }

    private static MemorySegment concat(List<MemorySegment> parts, Arena arena) {
        long total = parts.stream().mapToLong(MemorySegment::byteSize).sum();
        MemorySegment out = arena.allocate(total, TensorCopies.ALIGN);
        long at = 0;
        for (MemorySegment p : parts) {
            MemorySegment.copy(p, 0, out, at, p.byteSize());
            at += p.byteSize();
        }
        return out;
    }
}
