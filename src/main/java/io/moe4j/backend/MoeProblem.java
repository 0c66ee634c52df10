package io.moe4j.backend;

import io.moe4j.activation.Activation;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;

/**
 * What the oracle decides on: a layer's scheme and shapes, without its weights.
 *
 * @param expertParallel whether only some experts are held here
 */
public record MoeProblem(QuantScheme scheme, int hidden, int intermediate, int numExperts, int topK,
                         Activation activation, boolean expertParallel) {

    public static MoeProblem of(ExpertWeights w, int topK) {
        return new MoeProblem(w.scheme(), w.hidden(), w.intermediate(), w.globalExperts(), topK, w.activation(),
                w.expertMap() != null);
    }
}
