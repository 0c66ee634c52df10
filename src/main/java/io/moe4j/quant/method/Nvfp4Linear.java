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

/**
 * A compressed-tensors NVFP4 linear (W4A4, or W4A16 without input args): {@code weight_packed} U8 [out, in/2] (two
 * E2M1 codes a byte, even element low), {@code weight_scale} F8_E4M3 [out, in/16], {@code weight_global_scale} F32
 * (a quantize multiplier g: a weight is e2m1 · s8 / g) and for W4A4 {@code input_global_scale}, the g of the
 * input's NVFP4 quantize-dequantize. The codes and block scales stay mapped; 1/g becomes the matrix's one shard
 * scale, as in {@link CtNvfp4Method}.
 */
public final class Nvfp4Linear implements LinearMethod {
    private final boolean weightOnly;

    public Nvfp4Linear(boolean weightOnly) {
        this.weightOnly = weightOnly;
    }

    @Override
    public QuantScheme scheme() {
        return new QuantScheme("compressed-tensors " + (weightOnly ? "W4A16" : "W4A4") + " NVFP4", WeightFormat.NVFP4,
                weightOnly ? ActivationFormat.NONE : ActivationFormat.NVFP4, false);
    }

    @Override
    public LinearWeights load(Checkpoint checkpoint, String module, int outFeatures, int inFeatures, Arena arena) {
        int group = CtNvfp4Method.GROUP;
        if (inFeatures % group != 0) {
            throw new io.moe4j.MoeException(module + ": NVFP4 needs the input size (" + inFeatures
                    + ") to be a multiple of " + group);
        }
        Tensor codes = LinearTensors.expectTensor(checkpoint, module, "weight_packed",
                new long[]{outFeatures, inFeatures / 2}, DType.U8);
        Tensor scales = LinearTensors.expectTensor(checkpoint, module, "weight_scale",
                new long[]{outFeatures, inFeatures / group}, DType.F8_E4M3);
        float g = TensorChecks.scalar(LinearTensors.tensor(checkpoint, module, "weight_global_scale"));
        ExpertMatrix m = new ExpertMatrix(1, outFeatures, inFeatures, CodeType.FP4_E2M1, codes.segment(),
                new BlockScales(ScaleType.E4M3, scales.segment(), 1, group, outFeatures, inFeatures / group),
                null, new float[]{1f / g}, outFeatures, null);
        ActivationQuant q = weightOnly ? ActivationQuant.NONE : new ActivationQuant.Nvfp4(new float[]{
                TensorChecks.scalar(LinearTensors.tensor(checkpoint, module, "input_global_scale"))});
        return new LinearWeights(scheme(), m, q);
    }
}
