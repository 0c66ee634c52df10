package io.moe4j.backend.oracle;

import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The order the oracle tries backends in for each scheme, fastest first (the seed's
 * {@code _get_priority_backends}). Backends a list does not name follow it in registration order; the
 * {@code emulation} backend always comes last, so that there is always an answer.
 *
 * @param defaultOrder the order for weight formats without their own
 * @param byWeights    orders by weight format
 */
public record BackendPriority(List<String> defaultOrder, Map<WeightFormat, List<String>> byWeights) {

    public static final String LAST = "emulation";

    public BackendPriority {
        defaultOrder = List.copyOf(defaultOrder);
        Map<WeightFormat, List<String>> m = new EnumMap<>(WeightFormat.class);
        byWeights.forEach((k, v) -> m.put(k, List.copyOf(v)));
        byWeights = java.util.Collections.unmodifiableMap(m);
    }

    /**
     * cuda, then cpu, then emulation, for every scheme: a GPU kernel beats the Vector API on every format moe4j
     * reads, and the Vector API beats the exact reference.
     */
    public static BackendPriority standard() {
        return new BackendPriority(List.of("cuda", "cpu", LAST), Map.of());
    }

    public BackendPriority with(WeightFormat weights, List<String> order) {
        Map<WeightFormat, List<String>> m = new EnumMap<>(WeightFormat.class);
        m.putAll(byWeights);
        m.put(weights, order);
        return new BackendPriority(defaultOrder, m);
    }

    /** The order of the registered backends for this scheme. */
    public List<String> order(QuantScheme scheme, List<String> registered) {
        List<String> out = new ArrayList<>();
        for (String n : byWeights.getOrDefault(scheme.weights(), defaultOrder)) {
            if (registered.contains(n) && !out.contains(n) && !n.equals(LAST)) {
                out.add(n);
            }
        }
        for (String n : registered) {
            if (!out.contains(n) && !n.equals(LAST)) {
                out.add(n);
            }
        }
        if (registered.contains(LAST)) {
            out.add(LAST);
        }
        return out;
    }
}
