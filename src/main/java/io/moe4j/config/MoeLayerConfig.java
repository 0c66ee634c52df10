package io.moe4j.config;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.routing.RouterSpec;

/**
 * One MoE layer as its family defines it: sizes, router, activation and where its tensors are. What the
 * quantization config says about it is separate ({@code io.moe4j.quant}).
 *
 * @param routerWeight       router weight tensor [E, H]
 * @param routerBias         router bias tensor [E] (gpt-oss) or null
 * @param correctionBias     DeepSeek's e_score_correction_bias [E] or null
 * @param gateUpInterleaved  fused families only: gate/up rows interleaved (gpt-oss) rather than concatenated
 * @param fusedTransposed    fused families only: bf16 tensors stored [E, in, out] (gpt-oss, Llama-4) rather than [E, out, in]
 * @param hasExpertBias      gpt-oss: biases on both expert GEMMs
 * @param shared             shared expert naming and size, or null
 */
public record MoeLayerConfig(ModelFamily family, int layer, int hidden, int intermediate, RouterSpec router,
                             Activation activation, float swigluLimit, ExpertNaming experts,
                             String routerWeight, String routerBias, String correctionBias,
                             boolean gateUpInterleaved, boolean fusedTransposed, boolean hasExpertBias,
                             SharedExpert shared) {

    /**
     * A dense gated MLP that every token passes through beside the routed experts; unquantized in every
     * supported checkpoint format (the producers exclude it).
     *
     * @param modulePrefix e.g. {@code model.layers.0.mlp.shared_experts.}
     */
    public record SharedExpert(String modulePrefix, int intermediate) {
        public String weight(Projection p) {
            return modulePrefix + switch (p) {
                case GATE -> "gate_proj";
                case UP -> "up_proj";
                case DOWN -> "down_proj";
            } + ".weight";
        }
    }

    public int numExperts() {
        return router.numExperts();
    }

    public int topK() {
        return router.topK();
    }

    public GateLayout gateLayout() {
        if (!activation.gated()) {
            return GateLayout.NONE;
        }
        return gateUpInterleaved ? GateLayout.INTERLEAVED : GateLayout.CONCATENATED;
    }
}
