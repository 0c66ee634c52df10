package io.moe4j.bench.model;

/**
 * The sizes of a decoder as its config.json gives them, for the synthetic models of the whole-model bench.
 *
 * @param family       which config.json and tensor layout to write
 * @param hidden       hidden_size
 * @param layers       num_hidden_layers (of the model as written; see {@link #fullLayers})
 * @param fullLayers   num_hidden_layers of the real model
 * @param heads        num_attention_heads
 * @param kvHeads      num_key_value_heads
 * @param headDim      head_dim (GQA families)
 * @param experts      routed experts per MoE layer (of the model as written; see {@link #fullExperts})
 * @param fullExperts  routed experts of the real model
 * @param topK         experts per token
 * @param moeIntermediate  an expert's intermediate size
 * @param denseIntermediate the dense MLP's intermediate size (DeepSeek's first layers), 0 when there is none
 * @param vocab        vocab_size
 * @param slidingWindow sliding_window (gpt-oss's sliding layers), 0 for none
 * @param firstDense   DeepSeek's first_k_dense_replace
 * @param sharedExperts DeepSeek's n_shared_experts
 * @param mla          DeepSeek's latent attention sizes, null for GQA
 */
public record ModelShape(Family family, int hidden, int layers, int fullLayers, int heads, int kvHeads, int headDim,
                         int experts, int fullExperts, int topK, int moeIntermediate, int denseIntermediate, int vocab,
                         int slidingWindow, int firstDense, int sharedExperts, Mla mla) {

    /** The layouts the bench writes. */
    public enum Family {
        GPT_OSS, QWEN3_MOE, MIXTRAL, DEEPSEEK_V3
    }

    /** Multi-head latent attention: q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim. */
    public record Mla(int qLoraRank, int kvLoraRank, int nopeDim, int ropeDim, int vDim) {
    }

    public ModelShape {
        if (layers < 1 || layers > fullLayers) {
            throw new IllegalArgumentException("layers must be in 1.." + fullLayers + ", got " + layers);
        }
        if (experts < topK || experts > fullExperts) {
            throw new IllegalArgumentException("experts must be in " + topK + ".." + fullExperts + " (at least top-k "
                    + topK + "), got " + experts);
        }
        if ((family == Family.DEEPSEEK_V3) != (mla != null)) {
            throw new IllegalArgumentException("latent attention sizes go with DeepSeek-V3 only");
        }
    }

    /** The same model with only its first {@code n} layers. */
    public ModelShape withLayers(int n) {
        return new ModelShape(family, hidden, n, fullLayers, heads, kvHeads, headDim, experts, fullExperts, topK,
                moeIntermediate, denseIntermediate, vocab, slidingWindow, firstDense, sharedExperts, mla);
    }

    /** The same model with {@code n} routed experts a layer (a token still uses top-k of them). */
    public ModelShape withExperts(int n) {
        return new ModelShape(family, hidden, layers, fullLayers, heads, kvHeads, headDim, n, fullExperts, topK,
                moeIntermediate, denseIntermediate, vocab, slidingWindow, firstDense, sharedExperts, mla);
    }

    /** Whether layer {@code l} has an MoE feed-forward (DeepSeek's first layers are dense). */
    public boolean isMoe(int l) {
        return l >= firstDense;
    }

    /** The whole real model's shape. */
    public ModelShape full() {
        return withLayers(fullLayers).withExperts(fullExperts);
    }
}
