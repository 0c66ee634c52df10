package io.moe4j.backend;

import io.moe4j.activation.Activation;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;

/**
 * What the oracle decides on: a layer's scheme and shapes, without its weights.
 *
 * @param expertParallel whether only some experts are held here
 * @param splitActOrder  whether w13's gate and up halves carry act-order maps of their own (GPTQ checkpoints
 *                       whose projections were quantized apart), which not every backend runs
 */
public record MoeProblem(QuantScheme scheme, int hidden, int intermediate, int numExperts, int topK,
                         Activation activation, boolean expertParallel, boolean splitActOrder) {

    /** A problem whose w13 has at most one act-order map per expert. */
    public MoeProblem(QuantScheme scheme, int hidden, int intermediate, int numExperts, int topK,
                      Activation activation, boolean expertParallel) {
        this(scheme, hidden, intermediate, numExperts, topK, activation, expertParallel, false);
    }

    public static MoeProblem of(ExpertWeights w, int topK) {
        return new MoeProblem(w.scheme(), w.hidden(), w.intermediate(), w.globalExperts(), topK, w.activation(),
                w.expertMap() != null, w.w13().groupParts() > 1);
    }
}
