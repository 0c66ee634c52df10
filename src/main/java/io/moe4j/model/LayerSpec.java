package io.moe4j.model;

/**
 * One decoder layer: its attention and its feed-forward, a dense SwiGLU MLP or (when {@code denseMlp} is null) the
 * layer's MoE block as {@link io.moe4j.config.ModelConfig#layer} describes it.
 *
 * @param prefix   tensor name prefix, e.g. {@code model.layers.3.}
 * @param denseMlp the dense MLP, or null for an MoE layer
 */
public record LayerSpec(int index, String prefix, AttentionSpec attention, DenseMlpSpec denseMlp) {

    /** A dense gated MLP: down(silu(gate(x)) · up(x)). */
    public record DenseMlpSpec(String module, int intermediate) {
    }

    public boolean isMoe() {
        return denseMlp == null;
    }
}
