package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpectedTensor;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.LoadOptions;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.util.List;

import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * gpt-oss's own MXFP4 experts (vLLM's Mxfp4MoEMethod). The checkpoint holds {@code gate_up_proj_blocks} U8
 * [E, 2I, H/32, 16] with {@code gate_up_proj_scales} U8 (E8M0) [E, 2I, H/32], and {@code down_proj_blocks}
 * [E, H, I/32, 16] with {@code down_proj_scales} [E, H, I/32]: two E2M1 codes a byte, the even element in the low
 * nibble, one scale per 32 elements of a row. That is already the canonical packed layout (w13 rows interleave gate
 * and up, {@link io.moe4j.activation.GateLayout#INTERLEAVED}), so the stacks are the checkpoint's mapped bytes themselves:
 * nothing is copied unless expert parallelism picks a non-contiguous set of experts. Biases are bf16 and become
 * float32. Weight-only: activations stay in float.
 *
 * <p>The seed rounds H and I up to a backend's alignment (mxfp4_round_up_hidden_size_and_intermediate_size); here no
 * padding is applied: a backend that needs padded shapes pads when it prepares its own layout.
 */
public final class GptOssMxfp4Method implements QuantMethod {
    static final int BLOCK = 32;
    private static final QuantScheme SCHEME = new QuantScheme("gpt-oss mxfp4", WeightFormat.MXFP4, ActivationFormat.NONE, false);

    @Override
    public QuantScheme scheme() {
        return SCHEME;
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        long e = layer.numExperts();
        long h = layer.hidden();
        long i = layer.intermediate();
        var n = layer.experts();
        return List.of(
                new ExpectedTensor(n.fusedTensor("gate_up_proj_blocks"), DType.U8, new long[]{e, 2 * i, h / BLOCK, 16}),
                new ExpectedTensor(n.fusedTensor("gate_up_proj_scales"), DType.U8, new long[]{e, 2 * i, h / BLOCK}),
                new ExpectedTensor(n.fusedTensor("gate_up_proj_bias"), DType.BF16, new long[]{e, 2 * i}),
                new ExpectedTensor(n.fusedTensor("down_proj_blocks"), DType.U8, new long[]{e, h, i / BLOCK, 16}),
                new ExpectedTensor(n.fusedTensor("down_proj_scales"), DType.U8, new long[]{e, h, i / BLOCK}),
                new ExpectedTensor(n.fusedTensor("down_proj_bias"), DType.BF16, new long[]{e, h}));
    }

    @Override
    public ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena) {
        int h = layer.hidden();
        int i = layer.intermediate();
        if (h % BLOCK != 0 || i % BLOCK != 0) {
            throw new MoeException("layer " + layer.layer() + ": gpt-oss MXFP4 needs hidden_size (" + h + ") and "
                    + "intermediate_size (" + i + ") to be multiples of " + BLOCK);
        }
        if (!layer.activation().gated()) {
            throw new MoeException("layer " + layer.layer() + ": gpt-oss MXFP4 experts are gated (gate_up_proj), but the "
                    + "layer's activation " + layer.activation() + " is not");
        }
        int[] ids = ExpertSelection.localIds(layer, options);
        var progress = new LoadProgress(options);
        long e = layer.numExperts();
        var n = layer.experts();
        DType[] u8 = {DType.U8};
        DType[] scaleTypes = {DType.U8, DType.F8_E8M0};
        Tensor b13 = expect(checkpoint.tensor(n.fusedTensor("gate_up_proj_blocks")), new long[]{e, 2L * i, h / BLOCK, 16}, u8);
        Tensor s13 = expect(checkpoint.tensor(n.fusedTensor("gate_up_proj_scales")), new long[]{e, 2L * i, h / BLOCK}, scaleTypes);
        Tensor b2 = expect(checkpoint.tensor(n.fusedTensor("down_proj_blocks")), new long[]{e, h, i / BLOCK, 16}, u8);
        Tensor s2 = expect(checkpoint.tensor(n.fusedTensor("down_proj_scales")), new long[]{e, h, i / BLOCK}, scaleTypes);
        DType[] floats = {DType.BF16, DType.F16, DType.F32};
        Tensor bias13 = expect(checkpoint.tensor(n.fusedTensor("gate_up_proj_bias")), new long[]{e, 2L * i}, floats);
        Tensor bias2 = expect(checkpoint.tensor(n.fusedTensor("down_proj_bias")), new long[]{e, h}, floats);

        ExpertMatrix w13 = new ExpertMatrix(ids.length, 2 * i, h, CodeType.FP4_E2M1,
                ExpertSelection.selectExperts(b13, ids, arena, progress),
                new BlockScales(ScaleType.E8M0, ExpertSelection.selectExperts(s13, ids, arena, progress), 1, BLOCK, 2 * i, h / BLOCK),
                null, null, 0, null);
        ExpertMatrix w2 = new ExpertMatrix(ids.length, h, i, CodeType.FP4_E2M1,
                ExpertSelection.selectExperts(b2, ids, arena, progress),
                new BlockScales(ScaleType.E8M0, ExpertSelection.selectExperts(s2, ids, arena, progress), 1, BLOCK, h, i / BLOCK),
                null, null, 0, null);
        return new ExpertWeights(SCHEME, ids.length, h, i, w13, w2, ExpertSelection.expertRows(bias13, ids),
                ExpertSelection.expertRows(bias2, ids), layer.gateLayout(), layer.activation(), layer.swigluLimit(),
                ActivationQuant.NONE, ActivationQuant.NONE, ExpertSelection.expertMap(layer, options, ids));
    }
}
