package io.moe4j.quant.method;

import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.ExpectedTensor;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.LoadOptions;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;

import java.lang.foreign.Arena;
import java.util.List;

/**
 * Experts in the hub's own FP8 block format ({@code quant_method: fp8} with {@code weight_block_size}, as
 * DeepSeek-V3/R1 and Qwen3-*-FP8 ship them; vLLM's Fp8MoEMethod with block quantization): per expert and projection
 * {@code weight} F8_E4M3 [rows, cols] and {@code weight_scale_inv} F32 [ceil(rows/bn), ceil(cols/bk)], which despite
 * its name is the dequantization multiplier; activations quantized per token in groups of bk at run time. The
 * numerics are those of compressed-tensors' block FP8, so the loading is {@link CtFp8Method}'s with the other scale
 * name.
 */
public final class HubFp8Method implements QuantMethod {
    private final int[] block;
    private final CtFp8Method delegate;

    public HubFp8Method(int[] block) {
        if (block == null || block.length != 2 || block[0] <= 0 || block[1] <= 0) {
            throw new IllegalArgumentException("fp8 weight_block_size must be two positive sizes [block_n, block_k]");
        }
        this.block = block.clone();
        CtQuantArgs w = new CtQuantArgs(8, "float", true, null, CtQuantArgs.BLOCK, this.block, false, null, null);
        CtQuantArgs in = new CtQuantArgs(8, "float", true, block[1], CtQuantArgs.GROUP, null, true, null, null);
        this.delegate = new CtFp8Method(w, in, "weight_scale_inv");
    }

    @Override
    public QuantScheme scheme() {
        return new QuantScheme("fp8 (" + block[0] + "x" + block[1] + " block weights, dynamic group-" + block[1]
                + " activations)", WeightFormat.FP8_BLOCK, ActivationFormat.FP8_GROUP128, false);
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        return delegate.expectedTensors(layer);
    }

    @Override
    public ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena) {
        ExpertWeights w = delegate.load(checkpoint, layer, options, arena);
        return new ExpertWeights(scheme(), w.numExperts(), w.hidden(), w.intermediate(), w.w13(), w.w2(), w.w13Bias(),
                w.w2Bias(), w.gateLayout(), w.activation(), w.swigluLimit(), w.a13(), w.a2(), w.expertMap());
    }
}
