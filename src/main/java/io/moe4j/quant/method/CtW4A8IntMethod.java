package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpectedTensor;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LoadOptions;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static io.moe4j.quant.method.TensorChecks.ceilDiv;
import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * compressed-tensors {@code int-quantized} W4A8 experts (vLLM's CompressedTensorsW4A8Int8MoEMethod): int4 weights
 * stored one per byte as I8 values in [−8, 7], with a scale per output channel or per group of input features, and
 * int8 activations quantized dynamically per token (required).
 *
 * <p>Per expert and projection: {@code weight} I8 [rows, cols] and {@code weight_scale} [rows, groups] (BF16 for
 * groups, F32 per channel; either accepted). The values are packed here into {@link CodeType#INT4} nibbles (two a
 * byte, even element low), as the seed packs them for its kernel, so the stacks take 4 bits a weight. The seed is
 * CPU-only (KleidiAI kernels) and refuses other platforms; moe4j has no such restriction.
 */
public final class CtW4A8IntMethod implements QuantMethod {
    private final boolean channel;
    private final Integer groupSize;

    public CtW4A8IntMethod(CtQuantArgs weights, CtQuantArgs input) {
        if (input == null || !CtQuantArgs.TOKEN.equals(input.strategy()) || !input.dynamic()) {
            throw new IllegalArgumentException("W4A8-int MoE needs dynamic per-token activation quantization.");
        }
        if (weights.numBits() != 4) {
            throw new IllegalArgumentException("This method only supports 4-bit weights (num_bits=4).");
        }
        this.groupSize = weights.groupSize() != null && weights.groupSize() > 0 ? weights.groupSize() : null;
        this.channel = groupSize == null;
    }

    @Override
    public QuantScheme scheme() {
        return new QuantScheme("compressed-tensors W4A8 int " + (channel ? "channel" : "g" + groupSize),
                channel ? WeightFormat.INT4_CHANNEL : WeightFormat.INT4_GROUP, ActivationFormat.INT8_TOKEN, false);
    }

    /** The same scheme for a dense linear module. */
    public LinearMethod linear() {
        return new W4A8IntLinear(scheme(), channel ? 0 : groupSize);
    }

    private int groups(int cols) {
        return channel ? 1 : (int) ceilDiv(cols, groupSize);
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        List<Projection> all = ExpertShapes.all(layer);
        List<ExpectedTensor> out = new ArrayList<>(ExpertShapes.expected(layer, all, "weight", DType.I8,
                p -> new long[]{ExpertShapes.rows(layer, p), ExpertShapes.cols(layer, p)}));
        out.addAll(ExpertShapes.expected(layer, all, "weight_scale", channel ? DType.F32 : DType.BF16,
                p -> new long[]{ExpertShapes.rows(layer, p), groups(ExpertShapes.cols(layer, p))}));
        return out;
    }

    @Override
    public ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena) {
        ExpertLoad load = ExpertLoad.perExpert(checkpoint, layer, options, arena, scheme().name());
        int[] ids = load.ids();
        var progress = load.progress();
        ExpertMatrix w13 = stack(checkpoint, layer, ids, load.w13(), arena, progress);
        ExpertMatrix w2 = stack(checkpoint, layer, ids, ExpertLoad.W2, arena, progress);
        return load.unbiased(scheme(), w13, w2, new ActivationQuant.Int8PerToken(), new ActivationQuant.Int8PerToken());
    }

    private ExpertMatrix stack(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                               Arena arena, LoadProgress progress) {
        Projection p0 = projections.get(0);
        int rows = ExpertShapes.rows(layer, p0);
        int cols = ExpertShapes.cols(layer, p0);
        if (cols % 2 != 0) {
            throw new MoeException("layer " + layer.layer() + ": int4 weights need an even input size; found " + cols);
        }
        int groups = groups(cols);
        int total = rows * projections.size();
        List<Tensor> values = ExpertStacks.perExpert(ckpt, layer, ids, projections, "weight",
                (t, p) -> expect(t, new long[]{rows, cols}, DType.I8));
        List<Tensor> scales = ExpertStacks.perExpert(ckpt, layer, ids, projections, "weight_scale",
                (t, p) -> expect(t, new long[]{rows, groups}, DType.BF16, DType.F32, DType.F16));
        long rowBytes = CodeType.INT4.rowBytes(cols);
        MemorySegment codes = arena.allocate(rowBytes * total * ids.length, TensorCopies.ALIGN);
        long at = 0;
        for (Tensor t : values) {
            Int4Values.pack(t, rows, cols, codes, at);
            at += (long) rows * rowBytes;
            progress.add(t.segment().byteSize());
        }
        BlockScales bs = new BlockScales(ScaleType.F32, TensorCopies.toF32(arena, scales, progress), 1,
                channel ? cols : groupSize, total, groups);
        return new ExpertMatrix(ids.length, total, cols, CodeType.INT4, codes, bs, null, null, 0, null);
    }
}
