package io.moe4j.layer;

import io.moe4j.MoeException;
import io.moe4j.format.ElementFormat;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;

/**
 * A user's activation override (e.g. {@code MOE4J_MXFP4_ACTIVATION=fp8} on a weight-only layer) turned into the
 * activation quantize-dequantize the experts apply. Only dynamic formats can be imposed: static ones need scales
 * the checkpoint does not have.
 */
final class ActivationOverride {
    private ActivationOverride() {
    }

    static ExpertWeights apply(ExpertWeights w, QuantScheme scheme) {
        if (scheme.activations() == w.scheme().activations()) {
            return w;
        }
        ActivationQuant q = switch (scheme.activations()) {
            case NONE -> ActivationQuant.NONE;
            case FP8_TOKEN -> new ActivationQuant.Fp8PerToken();
            case FP8_GROUP128 -> new ActivationQuant.Fp8Group(128);
            case INT8_TOKEN -> new ActivationQuant.Int8PerToken();
            case MXFP4 -> new ActivationQuant.Mx(ElementFormat.E2M1);
            case MXFP6_E3M2 -> new ActivationQuant.Mx(ElementFormat.E3M2);
            case MXFP6_E2M3 -> new ActivationQuant.Mx(ElementFormat.E2M3);
            case NVFP4, FP8_STATIC, INT8_STATIC -> throw new MoeException("activation " + scheme.activations()
                    + " needs static scales from the checkpoint and cannot be imposed on " + w.scheme().name());
        };
        return new ExpertWeights(scheme, w.numExperts(), w.hidden(), w.intermediate(), w.w13(), w.w2(), w.w13Bias(),
                w.w2Bias(), w.gateLayout(), w.activation(), w.swigluLimit(), q, q, w.expertMap());
    }
}
