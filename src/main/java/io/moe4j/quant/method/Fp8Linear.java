package io.moe4j.quant.method;

import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;

import static io.moe4j.quant.method.TensorChecks.ceilDiv;
import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * An FP8 E4M3 linear: {@code weight} F8_E4M3 [out, in] with a float32 dequantization multiplier that is
 * <ul>
 *   <li>per tensor (a scalar), </li>
 *   <li>per output channel ([out, 1] or [out]), or</li>
 *   <li>per block ([ceil(out/bn), ceil(in/bk)]; the blocks at the bottom and right edges may be partial),</li>
 * </ul>
 * stored as {@code weight_scale} (compressed-tensors, Quark) or {@code weight_scale_inv} (the hub's own
 * {@code quant_method: fp8}, where despite the name it is the multiplier too). The input is quantize-dequantized
 * with a static per-tensor scale ({@code input_scale}), per token, per token and group of channels (block
 * weights), or not at all (weight-only FP8).
 */
public final class Fp8Linear implements LinearMethod {
    private final String producer;
    private final WeightFormat weights;
    private final int[] block;
    private final String scaleSuffix;
    private final ActivationFormat input;
    private final int group;

    private Fp8Linear(String producer, WeightFormat weights, int[] block, String scaleSuffix, ActivationFormat input,
                      int group) {
        this.producer = producer;
        this.weights = weights;
        this.block = block;
        this.scaleSuffix = scaleSuffix;
        this.input = input;
        this.group = group;
    }

    /** compressed-tensors {@code float-quantized} W8A8 (or W8A16 without input args). */
    public static Fp8Linear compressedTensors(CtQuantArgs w, CtQuantArgs in) {
        WeightFormat wf = switch (w.strategy()) {
            case CtQuantArgs.TENSOR -> WeightFormat.FP8_TENSOR;
            case CtQuantArgs.CHANNEL -> WeightFormat.FP8_CHANNEL;
            case CtQuantArgs.BLOCK -> WeightFormat.FP8_BLOCK;
            default -> throw new IllegalArgumentException("compressed-tensors FP8 linears take tensor, channel or block "
                    + "weights; found strategy " + w.strategy());
        };
        int[] block = null;
        if (wf == WeightFormat.FP8_BLOCK) {
            if (w.blockStructure() == null) {
                throw new IllegalArgumentException("FP8 block-quantized weights need a block_structure [block_n, block_k]");
            }
            block = w.blockStructure();
        }
        if (in == null) {
            return new Fp8Linear("compressed-tensors", wf, block, "weight_scale", ActivationFormat.NONE, 0);
        }
        if (block != null) {
            if (!in.dynamic()) {
                throw new IllegalArgumentException("FP8 block weights pair with dynamic per-token-group activations; "
                        + "found static " + in.strategy() + " input scales");
            }
            int g = CtQuantArgs.GROUP.equals(in.strategy()) && in.groupSize() != null ? in.groupSize() : block[1];
            return new Fp8Linear("compressed-tensors", wf, block, "weight_scale", ActivationFormat.FP8_GROUP128, g);
        }
        if (!in.dynamic()) {
            if (!CtQuantArgs.TENSOR.equals(in.strategy())) {
                throw new IllegalArgumentException("static FP8 input scales must be per tensor; found " + in.strategy());
            }
            return new Fp8Linear("compressed-tensors", wf, null, "weight_scale", ActivationFormat.FP8_STATIC, 0);
        }
        if (CtQuantArgs.TOKEN.equals(in.strategy())) {
            return new Fp8Linear("compressed-tensors", wf, null, "weight_scale", ActivationFormat.FP8_TOKEN, 0);
        }
        if (CtQuantArgs.GROUP.equals(in.strategy()) && in.groupSize() != null && in.groupSize() > 0) {
            return new Fp8Linear("compressed-tensors", wf, null, "weight_scale", ActivationFormat.FP8_GROUP128,
                    in.groupSize());
        }
        throw new IllegalArgumentException("dynamic FP8 activations per " + in.strategy() + " are not supported for "
                + "linears (supported: static per tensor, dynamic per token, dynamic per group)");
    }

    /** The hub's {@code quant_method: fp8} with {@code weight_block_size} [bn, bk]: dynamic groups of bk. */
    public static Fp8Linear hubBlock(int[] block) {
        return new Fp8Linear("fp8", WeightFormat.FP8_BLOCK, block.clone(), "weight_scale_inv",
                ActivationFormat.FP8_GROUP128, block[1]);
    }

    /** Quark FP8 W8A8: per-tensor or per-channel weights, static per-tensor or dynamic per-token input. */
    public static Fp8Linear quark(boolean perChannel, boolean staticInput) {
        return new Fp8Linear("quark", perChannel ? WeightFormat.FP8_CHANNEL : WeightFormat.FP8_TENSOR, null,
                "weight_scale", staticInput ? ActivationFormat.FP8_STATIC : ActivationFormat.FP8_TOKEN, 0);
    }

    @Override
    public QuantScheme scheme() {
        String w = switch (weights) {
            case FP8_TENSOR -> "per-tensor";
            case FP8_CHANNEL -> "per-channel";
            default -> block[0] + "x" + block[1] + " block";
        };
        String a = switch (input) {
            case FP8_STATIC -> "static per-tensor";
            case FP8_TOKEN -> "dynamic per-token";
            case FP8_GROUP128 -> "dynamic group-" + group;
            default -> "float";
        };
        // The hub's format is named by its quant_method, "fp8", as HubFp8Method names its experts.
        String name = producer.equals("fp8") ? "fp8" : producer + " FP8";
        return new QuantScheme(name + " (" + w + " weights, " + a + " activations)", weights, input, false);
    }

    @Override
    public LinearWeights load(Checkpoint checkpoint, String module, int outFeatures, int inFeatures, Arena arena) {
        Tensor w = LinearTensors.expectTensor(checkpoint, module, "weight", new long[]{outFeatures, inFeatures},
                DType.F8_E4M3);
        Tensor scale = LinearTensors.tensor(checkpoint, module, scaleSuffix);
        ExpertMatrix m = switch (weights) {
            case FP8_TENSOR -> new ExpertMatrix(1, outFeatures, inFeatures, CodeType.FP8_E4M3, w.segment(), null, null,
                    new float[]{TensorChecks.scalar(scale)}, outFeatures, null);
            case FP8_CHANNEL -> {
                long[] shape = scale.shape().length == 1 ? new long[]{outFeatures} : new long[]{outFeatures, 1};
                expect(scale, shape, LinearTensors.FLOATS);
                yield new ExpertMatrix(1, outFeatures, inFeatures, CodeType.FP8_E4M3, w.segment(),
                        new BlockScales(ScaleType.F32, LinearTensors.f32(scale, arena), 1, inFeatures, outFeatures, 1),
                        null, null, 0, null);
            }
            default -> {
                int rb = (int) ceilDiv(outFeatures, block[0]);
                int cb = (int) ceilDiv(inFeatures, block[1]);
                expect(scale, new long[]{rb, cb}, LinearTensors.FLOATS);
                yield new ExpertMatrix(1, outFeatures, inFeatures, CodeType.FP8_E4M3, w.segment(),
                        new BlockScales(ScaleType.F32, LinearTensors.f32(scale, arena), block[0], block[1], rb, cb),
                        null, null, 0, null);
            }
        };
        ActivationQuant q = switch (input) {
            case FP8_STATIC -> new ActivationQuant.Fp8Static(new float[]{
                    LinearTensors.staticScale(checkpoint, module, "input_scale")});
            case FP8_TOKEN -> new ActivationQuant.Fp8PerToken();
            case FP8_GROUP128 -> new ActivationQuant.Fp8Group(group);
            default -> ActivationQuant.NONE;
        };
        return new LinearWeights(scheme(), m, q);
    }
}
