package io.moe4j.quant.method;

import io.moe4j.format.ElementFormat;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;

/**
 * A Quark OCP MX linear: {@code weight} U8 (FP4 two codes a byte, FP6 four codes in three bytes) [out, packed in]
 * with {@code weight_scale} E8M0 [out, in/32], both mapped as they are; the input is quantize-dequantized to an MX
 * format per 32 channels (dynamic), to FP8 with the static {@code input_scale}, or left in float. Built by
 * {@link QuarkOcpMxMethod#linear()}, which validates the scheme.
 */
public final class OcpMxLinear implements LinearMethod {
    private final QuantScheme scheme;
    private final CodeType codes;
    /** The MX element of the input's quantize-dequantize, or null. */
    private final ElementFormat inputElement;

    OcpMxLinear(QuantScheme scheme, CodeType codes, ElementFormat inputElement) {
        this.scheme = scheme;
        this.codes = codes;
        this.inputElement = inputElement;
    }

    @Override
    public QuantScheme scheme() {
        return scheme;
    }

    @Override
    public LinearWeights load(Checkpoint checkpoint, String module, int outFeatures, int inFeatures, Arena arena) {
        int block = QuarkOcpMxMethod.BLOCK;
        if (inFeatures % block != 0) {
            throw new io.moe4j.MoeException(module + ": OCP MX needs the input size (" + inFeatures
                    + ") to be a multiple of " + block);
        }
        Tensor w = LinearTensors.expectTensor(checkpoint, module, "weight",
                new long[]{outFeatures, codes.rowBytes(inFeatures)}, DType.U8);
        Tensor s = LinearTensors.expectTensor(checkpoint, module, "weight_scale",
                new long[]{outFeatures, inFeatures / block}, DType.U8, DType.F8_E8M0);
        ExpertMatrix m = new ExpertMatrix(1, outFeatures, inFeatures, codes, w.segment(),
                new BlockScales(ScaleType.E8M0, s.segment(), 1, block, outFeatures, inFeatures / block),
                null, null, 0, null);
        ActivationQuant q;
        if (scheme.activations() == ActivationFormat.FP8_STATIC) {
            q = new ActivationQuant.Fp8Static(new float[]{LinearTensors.staticScale(checkpoint, module, "input_scale")});
        } else if (inputElement != null) {
            q = new ActivationQuant.Mx(inputElement);
        } else {
            q = ActivationQuant.NONE;
        }
        return new LinearWeights(scheme, m, q);
    }
}
