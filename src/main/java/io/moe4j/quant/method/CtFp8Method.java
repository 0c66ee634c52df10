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
import java.util.ArrayList;
import java.util.List;

import static io.moe4j.quant.method.TensorChecks.ceilDiv;
import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * compressed-tensors FP8 W8A8 experts (vLLM's CompressedTensorsW8A8Fp8MoEMethod): E4M3 weights with
 * <ul>
 *   <li>a per-tensor scale ({@code weight_scale} F32 [1]) and static per-tensor activations ({@code input_scale}
 *       F32 [1]);</li>
 *   <li>per-channel scales ([rows, 1]) and dynamic per-token activations;</li>
 *   <li>block scales ([ceil(rows/bn), ceil(cols/bk)], block_structure [bn, bk], 128×128 in practice) and dynamic
 *       activations quantized per token per group of 128 channels.</li>
 * </ul>
 * Post-load rules: static input scales collapse to their maximum over experts and over gate/up (the seed's
 * process_fp8_input_tensor_strategy_moe), with its warning when they differ. The seed also merges the gate and up
 * per-tensor weight scales into their maximum and requantizes the weights to it; moe4j keeps each shard's scale
 * exactly (two shard scales per expert on w13), which is the checkpoint's value with no requantization error.
 */
public final class CtFp8Method implements QuantMethod {
    private final CtQuantArgs weights;
    private final CtQuantArgs input;
    private final String strategy;
    private final boolean staticInputScales;
    private final int[] block;
    private final int activationGroup;
    /** The tensor of the weights' dequantization multipliers: weight_scale here, weight_scale_inv in hub FP8. */
    private final String scaleSuffix;

    public CtFp8Method(CtQuantArgs weights, CtQuantArgs input) {
        this(weights, input, "weight_scale");
    }

    CtFp8Method(CtQuantArgs weights, CtQuantArgs input, String scaleSuffix) {
        this.scaleSuffix = scaleSuffix;
        this.weights = weights;
        this.input = input;
        boolean perTensor = CtQuantArgs.TENSOR.equals(weights.strategy()) && CtQuantArgs.TENSOR.equals(input.strategy());
        boolean perChannel = CtQuantArgs.CHANNEL.equals(weights.strategy()) && CtQuantArgs.TOKEN.equals(input.strategy());
        if (!(perTensor || perChannel) && !CtQuantArgs.BLOCK.equals(weights.strategy())) {
            throw new IllegalArgumentException("For FP8 Fused MoE layers, only per-tensor weights with per-tensor "
                    + "activations, per-channel weights with per-token activations, and block weights are supported. "
                    + "Found weights " + weights.strategy() + ", activations " + input.strategy() + ".");
        }
        this.strategy = weights.strategy();
        this.staticInputScales = !input.dynamic();
        if (staticInputScales && perChannel) {
            throw new IllegalArgumentException("For FP8 Fused MoE layer, we require either per tensor or channelwise, "
                    + "dynamic per token quantization.");
        }
        if (CtQuantArgs.BLOCK.equals(strategy)) {
            if (weights.blockStructure() == null) {
                throw new IllegalArgumentException("FP8 block-quantized weights need a block_structure [block_n, block_k]");
            }
            if (staticInputScales) {
                // The seed pairs block weights with dynamic group-128 activations whatever the input args say, and
                // would load static input scales only to ignore them; moe4j refuses the contradiction instead.
                throw new IllegalArgumentException("For FP8 Fused MoE layers with block weights, activations must be "
                        + "dynamic (per token per group of 128); found static " + input.strategy() + " input scales.");
            }
            this.block = weights.blockStructure();
            this.activationGroup = CtQuantArgs.GROUP.equals(input.strategy()) && input.groupSize() != null
                    ? input.groupSize() : 128;
        } else {
            this.block = null;
            this.activationGroup = 0;
        }
        if (!staticInputScales && CtQuantArgs.TENSOR.equals(input.strategy()) && !CtQuantArgs.BLOCK.equals(strategy)) {
            throw new IllegalArgumentException("For FP8 Fused MoE layers, dynamic per-tensor activations are not "
                    + "supported; use static per-tensor or dynamic per-token activations.");
        }
    }

    @Override
    public QuantScheme scheme() {
        WeightFormat wf = switch (strategy) {
            case CtQuantArgs.TENSOR -> WeightFormat.FP8_TENSOR;
            case CtQuantArgs.CHANNEL -> WeightFormat.FP8_CHANNEL;
            default -> WeightFormat.FP8_BLOCK;
        };
        ActivationFormat af = block != null ? ActivationFormat.FP8_GROUP128
                : staticInputScales ? ActivationFormat.FP8_STATIC : ActivationFormat.FP8_TOKEN;
        String name = switch (strategy) {
            case CtQuantArgs.TENSOR -> "compressed-tensors W8A8 FP8 (per-tensor weights, static per-tensor activations)";
            case CtQuantArgs.CHANNEL -> "compressed-tensors W8A8 FP8 (per-channel weights, dynamic per-token activations)";
            default -> "compressed-tensors W8A8 FP8 (" + block[0] + "x" + block[1] + " block weights, dynamic group-"
                    + activationGroup + " activations)";
        };
        return new QuantScheme(name, wf, af, false);
    }

    private long[] scaleShape(MoeLayerConfig layer, Projection p) {
        int rows = ExpertShapes.rows(layer, p);
        int cols = ExpertShapes.cols(layer, p);
        return switch (strategy) {
            case CtQuantArgs.TENSOR -> new long[]{1};
            case CtQuantArgs.CHANNEL -> new long[]{rows, 1};
            default -> new long[]{ceilDiv(rows, block[0]), ceilDiv(cols, block[1])};
        };
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        List<Projection> all = ExpertShapes.all(layer);
        List<ExpectedTensor> out = new ArrayList<>(ExpertShapes.expected(layer, all, "weight", DType.F8_E4M3,
                p -> new long[]{ExpertShapes.rows(layer, p), ExpertShapes.cols(layer, p)}));
        out.addAll(ExpertShapes.expected(layer, all, scaleSuffix, DType.F32, p -> scaleShape(layer, p)));
        if (staticInputScales) {
            out.addAll(ExpertShapes.expected(layer, all, "input_scale", DType.F32, p -> new long[]{1}));
        }
        return out;
    }

    @Override
    public ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena) {
        ExpertLoad load = ExpertLoad.perExpert(checkpoint, layer, options, arena, scheme().name());
        if (block != null && layer.intermediate() % block[0] != 0) {
            throw new IllegalArgumentException("The output_size of gate's and up's weight = " + layer.intermediate()
                    + " is not divisible by weight quantization block_n = " + block[0] + ".");
        }
        int[] ids = load.ids();
        var progress = load.progress();
        List<Projection> p13 = load.w13();
        List<Projection> p2 = ExpertLoad.W2;
        ExpertMatrix w13 = stack(checkpoint, layer, ids, p13, arena, progress);
        ExpertMatrix w2 = stack(checkpoint, layer, ids, p2, arena, progress);
        ActivationQuant a13;
        ActivationQuant a2;
        if (block != null) {
            a13 = new ActivationQuant.Fp8Group(activationGroup);
            a2 = new ActivationQuant.Fp8Group(activationGroup);
        } else if (staticInputScales) {
            a13 = new ActivationQuant.Fp8Static(PostLoadRules.collapseToMax(
                    PostLoadRules.staticScales(checkpoint, layer, ids, p13, "input_scale"), "fp8"));
            a2 = new ActivationQuant.Fp8Static(PostLoadRules.collapseToMax(
                    PostLoadRules.staticScales(checkpoint, layer, ids, p2, "input_scale"), "fp8"));
        } else {
            a13 = new ActivationQuant.Fp8PerToken();
            a2 = new ActivationQuant.Fp8PerToken();
        }
        return load.unbiased(scheme(), w13, w2, a13, a2);
    }

    private ExpertMatrix stack(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                               Arena arena, LoadProgress progress) {
        Projection p0 = projections.get(0);
        int rows = ExpertShapes.rows(layer, p0);
        int cols = ExpertShapes.cols(layer, p0);
        int total = rows * projections.size();
        List<Tensor> codes = ExpertStacks.perExpert(ckpt, layer, ids, projections, "weight",
                (t, p) -> expect(t, new long[]{rows, cols}, DType.F8_E4M3));
        long[] scaleShape = scaleShape(layer, p0);
        List<Tensor> scales = ExpertStacks.perExpert(ckpt, layer, ids, projections, scaleSuffix,
                (t, p) -> CtQuantArgs.TENSOR.equals(strategy) ? t
                        : expect(t, scaleShape, DType.F32, DType.BF16, DType.F16));
        var data = TensorCopies.concat(arena, codes, progress);
        return switch (strategy) {
            case CtQuantArgs.TENSOR ->
                    ExpertStacks.perTensorScaled(ids.length, total, rows, cols, CodeType.FP8_E4M3, data, scales);
            case CtQuantArgs.CHANNEL -> ExpertStacks.perChannelScaled(ids.length, total, cols, CodeType.FP8_E4M3,
                    data, scales, arena, progress);
            default -> {
                if (projections.size() > 1 && rows % block[0] != 0) {
                    throw new MoeException("layer " + layer.layer() + ": FP8 block scales of gate and up cannot be "
                            + "stacked: " + rows + " rows is not a multiple of block_n " + block[0]);
                }
                int rowBlocks = (int) ceilDiv(rows, block[0]) * projections.size();
                yield new ExpertMatrix(ids.length, total, cols, CodeType.FP8_E4M3, data,
                        new BlockScales(ScaleType.F32, TensorCopies.toF32(arena, scales, progress), block[0], block[1],
                                rowBlocks, (int) ceilDiv(cols, block[1])), null, null, 0, null);
            }
        };
    }

    /** The same scheme for a dense linear module. */
    public LinearMethod linear() {
        return Fp8Linear.compressedTensors(weights, input);
    }

    public CtQuantArgs weights() {
        return weights;
    }

    public CtQuantArgs input() {
        return input;
    }
}
