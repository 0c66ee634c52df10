package io.moe4j.config;

/**
 * Where a family keeps an MoE layer's expert tensors. Per-expert families name one module per expert and
 * projection ({@code <experts>.<e>.<gate_proj>.weight}); fused families hold all experts in one tensor
 * ({@code <experts>.gate_up_proj}).
 *
 * @param blockPrefix   the MoE block, e.g. {@code model.layers.0.mlp.}
 * @param expertsPrefix the experts module with a trailing dot, e.g. {@code model.layers.0.mlp.experts.}
 * @param fused         whether experts are fused tensors rather than per-expert modules
 * @param gate          per-expert module name of the gate projection (w1 for Mixtral)
 * @param up            per-expert module name of the up projection (w3 for Mixtral)
 * @param down          per-expert module name of the down projection (w2 for Mixtral)
 */
public record ExpertNaming(String blockPrefix, String expertsPrefix, boolean fused, String gate, String up, String down) {

    public String moduleName(Projection p) {
        return switch (p) {
            case GATE -> gate;
            case UP -> up;
            case DOWN -> down;
        };
    }

    /** The module path of one expert's projection, e.g. {@code model.layers.0.mlp.experts.3.gate_proj}. */
    public String module(int expert, Projection p) {
        return expertsPrefix + expert + "." + moduleName(p);
    }

    /** A tensor of one expert's projection, e.g. {@code module(e, p) + ".weight_scale"}. */
    public String tensor(int expert, Projection p, String suffix) {
        return module(expert, p) + "." + suffix;
    }

    /** A fused tensor of all experts, e.g. {@code model.layers.0.mlp.experts.gate_up_proj_blocks}. */
    public String fusedTensor(String name) {
        return expertsPrefix + name;
    }

    /** The experts module path without the trailing dot. */
    public String expertsModule() {
        return expertsPrefix.substring(0, expertsPrefix.length() - 1);
    }
}
