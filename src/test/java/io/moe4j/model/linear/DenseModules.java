package io.moe4j.model.linear;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.config.ModelConfig;

import java.util.ArrayList;
import java.util.List;

/**
 * The dense linears of a decoder layer as transformers names and sizes them for each family (attention
 * projections, MLA's low-rank projections, dense MLPs), worked out from config.json for the tests.
 */
final class DenseModules {
    record Module(String name, int in, int out, boolean bias) {
    }

    private DenseModules() {
    }

    static List<Module> layer(ModelConfig config, int layer) {
        JsonNode c = config.json().has("text_config") ? config.json().get("text_config") : config.json();
        String p = "model.layers." + layer + ".";
        int h = c.get("hidden_size").asInt();
        int heads = c.get("num_attention_heads").asInt();
        int kvHeads = c.path("num_key_value_heads").asInt(heads);
        int headDim = c.hasNonNull("head_dim") ? c.get("head_dim").asInt() : h / heads;
        boolean bias = c.path("attention_bias").asBoolean(false);
        List<Module> out = new ArrayList<>();
        String attn = p + "self_attn.";
        switch (config.family()) {
            case DEEPSEEK_V3 -> {
                int nope = c.get("qk_nope_head_dim").asInt();
                int rope = c.get("qk_rope_head_dim").asInt();
                int v = c.get("v_head_dim").asInt();
                int kvRank = c.get("kv_lora_rank").asInt();
                if (c.hasNonNull("q_lora_rank")) {
                    int qRank = c.get("q_lora_rank").asInt();
                    out.add(new Module(attn + "q_a_proj", h, qRank, bias));
                    out.add(new Module(attn + "q_b_proj", qRank, heads * (nope + rope), false));
                } else {
                    out.add(new Module(attn + "q_proj", h, heads * (nope + rope), false));
                }
                out.add(new Module(attn + "kv_a_proj_with_mqa", h, kvRank + rope, bias));
                out.add(new Module(attn + "kv_b_proj", kvRank, heads * (nope + v), false));
                out.add(new Module(attn + "o_proj", heads * v, h, bias));
            }
            default -> {
                out.add(new Module(attn + "q_proj", h, heads * headDim, bias));
                out.add(new Module(attn + "k_proj", h, kvHeads * headDim, bias));
                out.add(new Module(attn + "v_proj", h, kvHeads * headDim, bias));
                out.add(new Module(attn + "o_proj", heads * headDim, h, bias));
            }
        }
        if (!config.isMoeLayer(layer)) {
            int inter = c.hasNonNull("intermediate_size_mlp") ? c.get("intermediate_size_mlp").asInt()
                    : c.get("intermediate_size").asInt();
            String mlp = p + (config.family() == io.moe4j.config.ModelFamily.LLAMA4_TEXT ? "feed_forward." : "mlp.");
            out.add(new Module(mlp + "gate_proj", h, inter, false));
            out.add(new Module(mlp + "up_proj", h, inter, false));
            out.add(new Module(mlp + "down_proj", inter, h, false));
        }
        return out;
    }

    static Module lmHead(ModelConfig config) {
        JsonNode c = config.json().has("text_config") ? config.json().get("text_config") : config.json();
        return new Module("lm_head", c.get("hidden_size").asInt(), c.get("vocab_size").asInt(), false);
    }

    static int layers(ModelConfig config) {
        return config.numLayers();
    }
}
