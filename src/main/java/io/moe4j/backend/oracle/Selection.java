package io.moe4j.backend.oracle;

import io.moe4j.backend.ActivationKey;
import io.moe4j.backend.BackendTraits;
import io.moe4j.backend.Backend;
import io.moe4j.backend.MoeProblem;
import io.moe4j.quant.ActivationFormat;

import java.util.List;

/**
 * The oracle's answer for one layer.
 *
 * @param chosen     the backend to prepare the weights with
 * @param reason     why it, in one line (its own reason, and why the faster ones were passed over)
 * @param considered every registered backend in priority order, with its answer
 * @param activation the precision the experts take activations in
 * @param problem    the problem as the backend was asked it: the layer's, except that a weight-only layer run
 *                   with quantized activations (a user's override) carries that activation format in its scheme,
 *                   so build the {@code ExpertWeights} given to {@code chosen.prepare} with this scheme
 * @param traits     the chosen backend's layout and round-up
 * @param sizes      the layer's sizes and the sizes the chosen backend's kernels work on
 */
public record Selection(Backend chosen, String reason, List<Candidate> considered, ActivationKey activation,
                        MoeProblem problem, BackendTraits traits, BackendTraits.PaddedSizes sizes) {

    public Selection {
        considered = List.copyOf(considered);
    }

    public String backendName() {
        return chosen.name();
    }

    /** The kernel weight layout the chosen backend converts the weights into. */
    public String layout() {
        return traits.layoutFor(problem.scheme().weights());
    }

    /** The activation format to quantize expert inputs with (NONE for float). */
    public ActivationFormat activationFormat() {
        return problem.scheme().activations();
    }

    /** The one line to log when the layer loads: the backend, for what, and why. */
    public String logLine() {
        MoeProblem p = problem;
        StringBuilder sb = new StringBuilder();
        sb.append("MoE backend ").append(chosen.name()).append(" for ").append(p.scheme().name())
                .append(" [H ").append(p.hidden()).append(", I ").append(p.intermediate()).append(", ")
                .append(p.numExperts()).append(" experts, top-").append(p.topK())
                .append(p.expertParallel() ? ", expert-parallel" : "").append(", ").append(activation)
                .append(" activations]: ").append(reason);
        if (sizes.padded()) {
            sb.append("; pads ").append(sizes);
        }
        sb.append("; layout ").append(layout());
        return sb.toString();
    }
}
