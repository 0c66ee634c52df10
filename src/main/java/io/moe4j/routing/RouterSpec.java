package io.moe4j.routing;

/**
 * A router's shape and rules (its weights come from the checkpoint).
 *
 * @param renormalize         divide the chosen weights by their sum
 * @param groups              DeepSeek n_group (1 when not grouped)
 * @param topkGroups          DeepSeek topk_group
 * @param routedScalingFactor multiplier applied once to the final weights
 */
public record RouterSpec(RouterKind kind, int numExperts, int topK, boolean renormalize, int groups, int topkGroups,
                         double routedScalingFactor) {

    public RouterSpec {
        if (topK < 1 || topK > numExperts) {
            throw new IllegalArgumentException("top-k " + topK + " must be in [1, " + numExperts + "]");
        }
        if (groups < 1 || numExperts % groups != 0) {
            throw new IllegalArgumentException(numExperts + " experts do not split into " + groups + " groups");
        }
        if (topkGroups < 1 || topkGroups > groups) {
            throw new IllegalArgumentException("topk_group " + topkGroups + " must be in [1, " + groups + "]");
        }
    }

    public static RouterSpec simple(RouterKind kind, int numExperts, int topK, boolean renormalize) {
        return new RouterSpec(kind, numExperts, topK, renormalize, 1, 1, 1.0);
    }

    /** Whether the router's weight multiplies the token before the expert rather than the expert's output. */
    public boolean weightOnInput() {
        return kind == RouterKind.SIGMOID_TOP1_ON_INPUT;
    }
}
