package io.moe4j.backend;

import io.moe4j.activation.Activation;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;

/**
 * What the oracle decides on: a layer's scheme and shapes, without its weights.
 *
 * @param expertParallel    whether only some experts are held here
 * @param splitActOrder     whether w13's gate and up halves carry act-order maps of their own (GPTQ checkpoints
 *                          whose projections were quantized apart), which not every backend runs
 * @param kernelActivations the precision the user asks the kernels to multiply activations in
 */
public record MoeProblem(QuantScheme scheme, int hidden, int intermediate, int numExperts, int topK,
                         Activation activation, boolean expertParallel, boolean splitActOrder,
                         KernelActivations kernelActivations) {

    public MoeProblem {
        if (kernelActivations == null) {
            throw new IllegalArgumentException("kernelActivations must be given (KernelActivations.FLOAT by default)");
        }
    }

    /** A problem with float kernel activations. */
    public MoeProblem(QuantScheme scheme, int hidden, int intermediate, int numExperts, int topK,
                      Activation activation, boolean expertParallel, boolean splitActOrder) {
        this(scheme, hidden, intermediate, numExperts, topK, activation, expertParallel, splitActOrder,
                KernelActivations.FLOAT);
    }

    /** A problem with float kernel activations whose w13 has at most one act-order map per expert. */
    public MoeProblem(QuantScheme scheme, int hidden, int intermediate, int numExperts, int topK,
                      Activation activation, boolean expertParallel) {
        this(scheme, hidden, intermediate, numExperts, topK, activation, expertParallel, false);
    }

    /** This problem with the kernels asked to multiply activations in {@code k}. */
    public MoeProblem withKernelActivations(KernelActivations k) {
        return new MoeProblem(scheme, hidden, intermediate, numExperts, topK, activation, expertParallel,
                splitActOrder, k);
    }

    public static MoeProblem of(ExpertWeights w, int topK) {
        return new MoeProblem(w.scheme(), w.hidden(), w.intermediate(), w.globalExperts(), topK, w.activation(),
                w.expertMap() != null, w.w13().groupParts() > 1);
    }
}
