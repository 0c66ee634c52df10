package io.moe4j.model;

/**
 * Grouped-query attention (gpt-oss, Qwen3-MoE, Mixtral, Llama-4).
 *
 * @param bias        q/k/v/o projections carry biases (gpt-oss)
 * @param sinks       a learned per-head logit joins each softmax and takes its share (gpt-oss)
 * @param qkNorm      per-head normalization of queries and keys
 * @param rope        the rotary embedding, or null for a NoPE layer (Llama-4)
 * @param window      full, sliding or chunked
 * @param temperature Llama-4's query scaling on NoPE layers, or null
 * @param scale       the softmax scale, head_dim^-0.5
 */
public record GqaSpec(int heads, int kvHeads, int headDim, boolean bias, boolean sinks, QkNorm qkNorm, Rope rope,
                      AttentionWindow window, TemperatureTuning temperature, float scale) implements AttentionSpec {

    public enum QkNorm {
        NONE,
        /** RMSNorm with a learned weight per head dimension, before RoPE (Qwen3 {@code q_norm}/{@code k_norm}). */
        RMS,
        /** RMSNorm without weight, after RoPE (Llama-4's {@code L2Norm}, on RoPE layers only). */
        L2
    }

    /**
     * Llama-4's attention temperature tuning: queries at position p are multiplied by
     * {@code log(floor((p + 1) / floorScale) + 1) · attnScale + 1}.
     */
    public record TemperatureTuning(double floorScale, double attnScale) {
        public float factor(long position) {
            return (float) (Math.log1p(Math.floor((position + 1.0) / floorScale)) * attnScale + 1.0);
        }
    }
}
