package io.moe4j.quant;

import io.moe4j.quant.ActivationQuant;

/**
 * The weight of one linear module as a backend needs it: a one-expert {@link ExpertMatrix} [out, in] in checkpoint
 * precision and the quantize-dequantize its input goes through first ({@link ActivationQuant#NONE} for weight-only
 * and unquantized schemes; static scales are at index 0).
 */
public record LinearWeights(QuantScheme scheme, ExpertMatrix weight, ActivationQuant input) {

    public LinearWeights {
        if (weight.experts() != 1) {
            throw new IllegalArgumentException("a linear's weight is one matrix, not a stack of " + weight.experts());
        }
    }

    public int outFeatures() {
        return weight.rows();
    }

    public int inFeatures() {
        return weight.cols();
    }
}
