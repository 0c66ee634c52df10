package io.moe4j.routing;

/** The routing functions of the supported families. */
public enum RouterKind {
    /** softmax over all logits → top-k → optional renormalization (Mixtral, Qwen3-MoE). */
    SOFTMAX_TOPK,
    /** top-k over logits + bias → softmax over the k chosen (gpt-oss). */
    TOPK_SOFTMAX,
    /**
     * sigmoid scores; a correction bias used only to choose; groups ranked by the sum of their top-2; top-k
     * within the best groups; renormalize; times the routed scaling factor (DeepSeek-V3).
     */
    SIGMOID_GROUPED_TOPK,
    /** top-1 over logits; its sigmoid scales the token before the expert, not the output (Llama-4). */
    SIGMOID_TOP1_ON_INPUT
}
