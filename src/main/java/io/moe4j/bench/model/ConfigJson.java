package io.moe4j.bench.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The config.json of a synthetic model: the keys and values of its hub model's config.json, with the layer and
 * expert counts of the model as written.
 */
final class ConfigJson {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ConfigJson() {
    }

    static String of(ModelShape s) {
        ObjectNode c = JSON.createObjectNode();
        c.put("hidden_size", s.hidden());
        c.put("num_hidden_layers", s.layers());
        c.put("vocab_size", s.vocab());
        c.put("num_attention_heads", s.heads());
        c.put("num_key_value_heads", s.kvHeads());
        c.put("num_experts_per_tok", s.topK());
        c.put("torch_dtype", "bfloat16");
        c.put("hidden_act", "silu");
        c.put("tie_word_embeddings", false);
        c.put("attention_dropout", 0.0);
        switch (s.family()) {
            case GPT_OSS -> gptOss(c, s);
            case QWEN3_MOE -> qwen3(c, s);
            case MIXTRAL -> mixtral(c, s);
            case DEEPSEEK_V3 -> deepseek(c, s);
        }
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(c);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void gptOss(ObjectNode c, ModelShape s) {
        c.putArray("architectures").add("GptOssForCausalLM");
        c.put("model_type", "gpt_oss");
        c.put("head_dim", s.headDim());
        c.put("intermediate_size", s.moeIntermediate());
        c.put("num_local_experts", s.experts());
        c.put("experts_per_token", s.topK());
        c.put("sliding_window", s.slidingWindow());
        ArrayNode types = c.putArray("layer_types");
        for (int l = 0; l < s.layers(); l++) {
            types.add(l % 2 == 0 ? "sliding_attention" : "full_attention");
        }
        c.put("rms_norm_eps", 1e-5);
        c.put("rope_theta", 150000);
        ObjectNode rope = c.putObject("rope_scaling");
        rope.put("beta_fast", 32.0);
        rope.put("beta_slow", 1.0);
        rope.put("factor", 32.0);
        rope.put("original_max_position_embeddings", 4096);
        rope.put("rope_type", "yarn");
        rope.put("truncate", false);
        c.put("max_position_embeddings", 131072);
        c.put("initial_context_length", 4096);
        c.put("attention_bias", true);
        c.put("swiglu_limit", 7.0);
        c.put("bos_token_id", 199998);
        c.put("eos_token_id", 200002);
        c.put("pad_token_id", 199999);
        ObjectNode q = c.putObject("quantization_config");
        q.put("quant_method", "mxfp4");
        q.putArray("modules_to_not_convert").add("model.layers.*.self_attn").add("model.layers.*.mlp.router")
                .add("model.embed_tokens").add("lm_head");
    }

    private static void qwen3(ObjectNode c, ModelShape s) {
        c.putArray("architectures").add("Qwen3MoeForCausalLM");
        c.put("model_type", "qwen3_moe");
        c.put("head_dim", s.headDim());
        c.put("moe_intermediate_size", s.moeIntermediate());
        c.put("intermediate_size", 6144);
        c.put("num_experts", s.experts());
        c.put("norm_topk_prob", true);
        c.put("decoder_sparse_step", 1);
        c.putArray("mlp_only_layers");
        c.put("rms_norm_eps", 1e-6);
        c.put("rope_theta", 1_000_000.0);
        c.putNull("rope_scaling");
        c.put("max_position_embeddings", 40960);
        c.put("attention_bias", false);
        c.put("use_sliding_window", false);
        c.putNull("sliding_window");
        c.put("max_window_layers", s.layers());
        c.put("bos_token_id", 151643);
        c.put("eos_token_id", 151645);
        ObjectNode q = hubFp8(c);
        ArrayNode skip = q.putArray("modules_to_not_convert").add("lm_head");
        for (int l = 0; l < s.layers(); l++) {
            skip.add("model.layers." + l + ".mlp.gate");
        }
    }

    private static void mixtral(ObjectNode c, ModelShape s) {
        c.putArray("architectures").add("MixtralForCausalLM");
        c.put("model_type", "mixtral");
        c.put("head_dim", s.headDim());
        c.put("intermediate_size", s.moeIntermediate());
        c.put("num_local_experts", s.experts());
        c.put("rms_norm_eps", 1e-5);
        c.put("rope_theta", 1_000_000.0);
        c.putNull("sliding_window");
        c.put("max_position_embeddings", 32768);
        c.put("router_aux_loss_coef", 0.02);
        c.put("bos_token_id", 1);
        c.put("eos_token_id", 2);
        ObjectNode q = c.putObject("quantization_config");
        q.put("quant_method", "compressed-tensors");
        q.put("format", "float-quantized");
        q.put("quantization_status", "compressed");
        ObjectNode g = q.putObject("config_groups").putObject("group_0");
        g.putArray("targets").add("Linear");
        fp8Args(g.putObject("weights"));
        fp8Args(g.putObject("input_activations"));
        g.putNull("output_activations");
        g.put("format", "float-quantized");
        q.putArray("ignore").add("lm_head").add("re:.*block_sparse_moe.gate$");
    }

    private static void fp8Args(ObjectNode a) {
        a.put("num_bits", 8);
        a.put("type", "float");
        a.put("symmetric", true);
        a.putNull("group_size");
        a.put("strategy", "tensor");
        a.putNull("block_structure");
        a.put("dynamic", false);
        a.putNull("actorder");
        a.put("observer", "minmax");
    }

    private static void deepseek(ObjectNode c, ModelShape s) {
        ModelShape.Mla m = s.mla();
        c.putArray("architectures").add("DeepseekV3ForCausalLM");
        c.put("model_type", "deepseek_v3");
        c.put("intermediate_size", s.denseIntermediate());
        c.put("moe_intermediate_size", s.moeIntermediate());
        c.put("first_k_dense_replace", s.firstDense());
        c.put("moe_layer_freq", 1);
        c.put("n_routed_experts", s.experts());
        c.put("n_shared_experts", s.sharedExperts());
        c.put("n_group", 8);
        c.put("topk_group", 4);
        c.put("routed_scaling_factor", 2.5);
        c.put("norm_topk_prob", true);
        c.put("scoring_func", "sigmoid");
        c.put("topk_method", "noaux_tc");
        c.put("q_lora_rank", m.qLoraRank());
        c.put("kv_lora_rank", m.kvLoraRank());
        c.put("qk_rope_head_dim", m.ropeDim());
        c.put("qk_nope_head_dim", m.nopeDim());
        c.put("v_head_dim", m.vDim());
        c.put("rms_norm_eps", 1e-6);
        c.put("rope_theta", 10000);
        ObjectNode rope = c.putObject("rope_scaling");
        rope.put("beta_fast", 32);
        rope.put("beta_slow", 1);
        rope.put("factor", 40);
        rope.put("mscale", 1.0);
        rope.put("mscale_all_dim", 1.0);
        rope.put("original_max_position_embeddings", 4096);
        rope.put("type", "yarn");
        c.put("max_position_embeddings", 163840);
        c.put("attention_bias", false);
        c.put("ep_size", 1);
        // The hub model has one multi-token-prediction layer after the last; generation does not run it.
        c.put("num_nextn_predict_layers", 0);
        c.put("bos_token_id", 0);
        c.put("eos_token_id", 1);
        hubFp8(c);
    }

    private static ObjectNode hubFp8(ObjectNode c) {
        ObjectNode q = c.putObject("quantization_config");
        q.put("quant_method", "fp8");
        q.put("activation_scheme", "dynamic");
        q.put("fmt", "e4m3");
        q.putArray("weight_block_size").add(ModelTensors.FP8_BLOCK).add(ModelTensors.FP8_BLOCK);
        return q;
    }
}
