package io.moe4j.backend.emulation;

import io.moe4j.backend.Backend;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.quant.ExpertWeights;

/**
 * The exact reference: dequantize weights row by row, quantize-dequantize activations per scheme, and compute
 * in double. Every scheme runs here on every platform, so the oracle always has an answer; it is slow.
 */
public final class EmulationBackend implements Backend {
    public static final String NAME = "emulation";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return "exact float64 reference on dequantized weights (any scheme, any machine; slow)";
    }

    @Override
    public Support support(MoeProblem problem, Platform platform) {
        return Support.yes("runs every scheme exactly in Java, on any machine");
    }

    @Override
    public Experts prepare(ExpertWeights weights, ExecutionOptions options) {
        return new EmulationExperts(weights, options.threads());
    }
}
