package io.moe4j.model;

/**
 * DeepSeek-V3 multi-head latent attention.
 *
 * @param qLoraRank  rank of the query's low-rank path (q_a_proj → q_a_layernorm → q_b_proj), 0 for a plain q_proj
 * @param kvLoraRank the compressed latent that the cache holds (kv_a_proj_with_mqa → kv_a_layernorm)
 * @param nopeDim    per-head query/key dimensions without position
 * @param ropeDim    per-head query dimensions with RoPE; the key's rope part is one vector shared by all heads
 * @param vDim       per-head value dimensions
 * @param bias       q_a_proj, kv_a_proj_with_mqa and o_proj carry biases ({@code attention_bias})
 * @param normEps    eps of q_a_layernorm and kv_a_layernorm
 * @param scale      (nope + rope)^-0.5, times YaRN's mscale(factor, mscale_all_dim)² when the rope is scaled
 */
public record MlaSpec(int heads, int qLoraRank, int kvLoraRank, int nopeDim, int ropeDim, int vDim, boolean bias,
                      Rope rope, float normEps, float scale) implements AttentionSpec {
}
