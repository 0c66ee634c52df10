package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ScaleType;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static io.moe4j.quant.method.TensorChecks.expect;
import static io.moe4j.quant.method.TensorChecks.scalar;

/**
 * Builds the canonical stacks of per-expert tensors: each local expert's projections resolved and checked,
 * concatenated expert by expert, with their scales.
 */
final class ExpertStacks {
    private ExpertStacks() {
    }

    /**
     * Resolves tensor {@code suffix} of every local expert's projections (in order: expert by expert, projections in
     * the order given), checking each with {@code check}. Fails on the first missing or mis-shaped tensor.
     */
    static List<Tensor> perExpert(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                                  String suffix, ProjectionCheck check) {
        List<Tensor> out = new ArrayList<>(ids.length * projections.size());
        for (int id : ids) {
            for (Projection p : projections) {
                out.add(check.check(ckpt.tensor(ExpertShapes.name(layer, id, p, suffix)), p));
            }
        }
        return out;
    }

    /** Checks one projection's tensor; returns it. */
    @FunctionalInterface
    interface ProjectionCheck {
        Tensor check(Tensor t, Projection p);
    }

    /** A stack whose shards (gate, up, down of each expert) each have one per-tensor scale, kept exact per shard. */
    static ExpertMatrix perTensorScaled(int experts, int rows, int shardRows, int cols, CodeType codes,
                                        MemorySegment data, List<Tensor> scales) {
        float[] shard = new float[scales.size()];
        for (int i = 0; i < shard.length; i++) {
            shard[i] = scalar(scales.get(i));
        }
        return new ExpertMatrix(experts, rows, cols, codes, data, null, null, shard, shardRows, null);
    }

    /** A stack with one float scale per output row (per-channel weights). */
    static ExpertMatrix perChannelScaled(int experts, int rows, int cols, CodeType codes, MemorySegment data,
                                         List<Tensor> scales, Arena arena, LoadProgress progress) {
        BlockScales bs = new BlockScales(ScaleType.F32, TensorCopies.toF32(arena, scales, progress), 1, cols, rows, 1);
        return new ExpertMatrix(experts, rows, cols, codes, data, bs, null, null, 0, null);
    }

    /**
     * A stack of sub-byte packed codes with one byte scale per {@code blockCols} elements of a row (OCP MX, NVFP4):
     * per projection, tensor {@code codeSuffix} U8 [rows, packed cols] and {@code scaleSuffix} [rows, cols / blockCols],
     * concatenated expert by expert.
     */
    static ExpertMatrix stackPackedWithByteScales(Checkpoint ckpt, MoeLayerConfig layer, int[] ids,
                                                  List<Projection> projections, CodeType codes, String codeSuffix,
                                                  ScaleType scaleType, String scaleSuffix, DType[] scaleDtypes,
                                                  int blockCols, float[] shardScales, int shardRows, Arena arena,
                                                  LoadProgress progress) {
        Projection p0 = projections.get(0);
        int rows = ExpertShapes.rows(layer, p0);
        int cols = ExpertShapes.cols(layer, p0);
        if (cols % blockCols != 0) {
            throw new MoeException("layer " + layer.layer() + ": " + codes + " weights need the input size of "
                    + p0.name().toLowerCase(java.util.Locale.ROOT) + " (" + cols + ") to be a multiple of " + blockCols);
        }
        long packed = codes.rowBytes(cols);
        List<Tensor> code = perExpert(ckpt, layer, ids, projections, codeSuffix,
                (t, p) -> expect(t, new long[]{rows, packed}, DType.U8));
        List<Tensor> scale = perExpert(ckpt, layer, ids, projections, scaleSuffix,
                (t, p) -> expect(t, new long[]{rows, cols / blockCols}, scaleDtypes));
        int total = rows * projections.size();
        return new ExpertMatrix(ids.length, total, cols, codes, TensorCopies.concat(arena, code, progress),
                new BlockScales(scaleType, TensorCopies.concat(arena, scale, progress), 1, blockCols, total, cols / blockCols),
                null, shardScales, shardRows, null);
    }
}
