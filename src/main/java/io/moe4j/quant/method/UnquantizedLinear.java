package io.moe4j.quant.method;

import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;

/**
 * A linear module the quantization config leaves alone: {@code weight} [out, in] in BF16, F16 or F32 as the tensor
 * says (the declared dtype only names the scheme before loading), mapped as it is, input in float.
 */
public final class UnquantizedLinear implements LinearMethod {
    private final WeightFormat declared;

    public UnquantizedLinear(WeightFormat declared) {
        if (!declared.unquantized()) {
            throw new IllegalArgumentException(declared + " is not an unquantized weight format");
        }
        this.declared = declared;
    }

    @Override
    public QuantScheme scheme() {
        return QuantScheme.unquantized(declared);
    }

    @Override
    public LinearWeights load(Checkpoint checkpoint, String module, int outFeatures, int inFeatures, Arena arena) {
        Tensor w = LinearTensors.expectTensor(checkpoint, module, "weight", new long[]{outFeatures, inFeatures},
                LinearTensors.FLOATS);
        ExpertMatrix m = ExpertMatrix.dense(1, outFeatures, inFeatures, FloatDtypes.codeType(w.dtype()), w.segment());
        return new LinearWeights(QuantScheme.unquantized(FloatDtypes.weightFormat(m.codes())), m, ActivationQuant.NONE);
    }
}
