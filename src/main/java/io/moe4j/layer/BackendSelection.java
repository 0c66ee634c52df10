package io.moe4j.layer;

import io.moe4j.MoeException;
import io.moe4j.backend.Backend;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.backend.emulation.EmulationBackend;
import io.moe4j.quant.ExpertWeights;

import java.util.List;

/**
 * The backend chosen for a layer and why. Interim: picks among the backends built so far by name; the oracle
 * (io.moe4j.backend.oracle) replaces the choice logic.
 */
public record BackendSelection(Backend backend, String message) {

    static BackendSelection choose(ExpertWeights weights, int topK, MoeLayerOptions options) {
        List<Backend> known = List.of(new EmulationBackend());
        MoeProblem problem = MoeProblem.of(weights, topK);
        Platform platform = options.platform() != null ? options.platform()
                : Platform.cpuOnly(Runtime.getRuntime().availableProcessors(), 0);
        String wanted = options.backend() == null ? "auto" : options.backend();
        for (Backend b : known) {
            if (wanted.equals("auto") || wanted.equals(b.name())) {
                Support s = b.support(problem, platform);
                if (s.supported()) {
                    return new BackendSelection(b, b.name() + " for " + weights.scheme().name() + ": " + s.reason());
                }
                if (!wanted.equals("auto")) {
                    throw new MoeException("backend " + wanted + " cannot run " + weights.scheme().name() + ": " + s.reason());
                }
            }
        }
        throw new MoeException("unknown backend '" + wanted + "' (available: auto, "
                + String.join(", ", known.stream().map(Backend::name).toList()) + ")");
    }
}
