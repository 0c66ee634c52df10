package io.moe4j.model;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.ModelFamily;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The decoder stack of a Hugging Face config as transformers builds it for each family: sizes, per-layer attention
 * (kind, window, RoPE, norms) and feed-forward (dense or MoE), and where the tensors are. A multimodal Llama-4
 * config runs its nested {@code text_config}, whose weights sit under {@code language_model.}.
 *
 * @param modelPrefix  e.g. {@code model.} or {@code language_model.model.}
 * @param lmHead       the output projection module, e.g. {@code lm_head}
 * @param maxPositions the context limit, {@code max_position_embeddings}
 */
public record DecoderConfig(ModelConfig model, ModelFamily family, int hidden, int vocab, float normEps,
                            int maxPositions, boolean tieEmbeddings, String modelPrefix, String lmHead,
                            List<LayerSpec> layers) {

    /** The architectures each family runs as a causal LM (a config without {@code architectures} goes by model_type). */
    private static final Map<ModelFamily, Set<String>> ARCHITECTURES = Map.of(
            ModelFamily.GPT_OSS, Set.of("GptOssForCausalLM"),
            ModelFamily.QWEN3_MOE, Set.of("Qwen3MoeForCausalLM"),
            ModelFamily.MIXTRAL, Set.of("MixtralForCausalLM"),
            ModelFamily.DEEPSEEK_V3, Set.of("DeepseekV3ForCausalLM"),
            ModelFamily.LLAMA4_TEXT, Set.of("Llama4ForCausalLM", "Llama4ForConditionalGeneration"));

    public String embedTokens() {
        return modelPrefix + "embed_tokens";
    }

    public String finalNorm() {
        return modelPrefix + "norm";
    }

    public int numLayers() {
        return layers.size();
    }

    public static DecoderConfig of(ModelConfig model) {
        return new Parser(model).parse();
    }

    /** Reads one config; every missing or wrong key is an error naming the file and key. */
    private static final class Parser {
        private final ModelConfig model;
        private final ModelFamily family;
        private final JsonNode root;
        private final JsonNode text;
        private final String where;

        Parser(ModelConfig model) {
            this.model = model;
            this.family = model.family();
            this.root = model.json();
            this.text = family == ModelFamily.LLAMA4_TEXT && root.has("text_config") ? root.get("text_config") : root;
            this.where = model.source().toString();
        }

        DecoderConfig parse() {
            checkArchitecture();
            boolean nested = text != root;
            String modelPrefix = nested ? "language_model.model." : "model.";
            String lmHead = nested ? "language_model.lm_head" : "lm_head";
            int hidden = requiredInt("hidden_size");
            int layers = requiredInt("num_hidden_layers");
            int vocab = requiredInt("vocab_size");
            float eps = (float) text.path("rms_norm_eps").asDouble(1e-6);
            if (!(eps > 0) || Float.isInfinite(eps)) {
                // zero or less makes a norm of zeros divide by nothing: NaN logits, not an error, downstream
                throw new MoeException(where + ": rms_norm_eps must be a positive number, got "
                        + text.path("rms_norm_eps"));
            }
            int maxPositions = requiredInt("max_position_embeddings");
            boolean tie = text.path("tie_word_embeddings").asBoolean(root.path("tie_word_embeddings").asBoolean(false));
            String act = text.path("hidden_act").asText("silu");
            if (!act.equals("silu") && !act.equals("swish")) {
                throw new MoeException(where + ": hidden_act '" + act + "' is not supported for the dense MLP (silu)");
            }
            List<LayerSpec> specs = new ArrayList<>();
            for (int l = 0; l < layers; l++) {
                String prefix = modelPrefix + "layers." + l + ".";
                AttentionSpec attention = family == ModelFamily.DEEPSEEK_V3 ? mla() : gqa(l, hidden, maxPositions);
                LayerSpec.DenseMlpSpec mlp = model.isMoeLayer(l) ? null : denseMlp(prefix);
                specs.add(new LayerSpec(l, prefix, attention, mlp));
            }
            return new DecoderConfig(model, family, hidden, vocab, eps, maxPositions, tie, modelPrefix, lmHead,
                    List.copyOf(specs));
        }

        private void checkArchitecture() {
            JsonNode archs = root.path("architectures");
            if (!archs.isArray() || archs.isEmpty()) {
                return;
            }
            Set<String> known = ARCHITECTURES.get(family);
            for (JsonNode a : archs) {
                if (known.contains(a.asText())) {
                    return;
                }
            }
            throw new MoeException(where + ": architectures " + archs + " is not one moe4j runs for model_type '"
                    + family.modelType() + "' (supported: " + known + ")");
        }

        private LayerSpec.DenseMlpSpec denseMlp(String prefix) {
            return switch (family) {
                case LLAMA4_TEXT -> new LayerSpec.DenseMlpSpec(prefix + "feed_forward",
                        text.has("intermediate_size_mlp") ? requiredInt("intermediate_size_mlp") : requiredInt("intermediate_size"));
                case QWEN3_MOE, DEEPSEEK_V3 -> new LayerSpec.DenseMlpSpec(prefix + "mlp", requiredInt("intermediate_size"));
                case GPT_OSS, MIXTRAL -> throw new MoeException(where + ": " + family.modelType() + " has no dense layers");
            };
        }

        private GqaSpec gqa(int layer, int hidden, int maxPositions) {
            int heads = requiredInt("num_attention_heads");
            int kvHeads = text.hasNonNull("num_key_value_heads") ? requiredInt("num_key_value_heads") : heads;
            if (kvHeads <= 0 || heads % kvHeads != 0) {
                throw new MoeException(where + ": num_attention_heads " + heads + " is not a multiple of num_key_value_heads " + kvHeads);
            }
            int headDim = text.hasNonNull("head_dim") ? requiredInt("head_dim") : hidden / heads;
            float scale = (float) (1.0 / Math.sqrt(headDim));
            String layerType = layerType(layer);
            boolean useRope = true;
            GqaSpec.QkNorm qkNorm = GqaSpec.QkNorm.NONE;
            GqaSpec.TemperatureTuning temperature = null;
            boolean interleaved = false;
            boolean bias = text.path("attention_bias").asBoolean(false);
            boolean sinks = false;
            switch (family) {
                case GPT_OSS -> {
                    bias = text.path("attention_bias").asBoolean(true);
                    sinks = true;
                }
                case QWEN3_MOE -> qkNorm = GqaSpec.QkNorm.RMS;
                case LLAMA4_TEXT -> {
                    interleaved = true; // the complex-number rotation pairs adjacent dimensions
                    useRope = noRopeLayerUsesRope(layer);
                    if (useRope && text.path("use_qk_norm").asBoolean(true)) {
                        qkNorm = GqaSpec.QkNorm.L2;
                    }
                    if (!useRope && text.path("attn_temperature_tuning").asBoolean(true)) {
                        temperature = new GqaSpec.TemperatureTuning(text.path("floor_scale").asDouble(8192),
                                text.path("attn_scale").asDouble(0.1));
                    }
                }
                default -> {
                }
            }
            AttentionWindow window = switch (layerType) {
                case "full_attention" -> AttentionWindow.FULL;
                case "sliding_attention" -> AttentionWindow.sliding(requiredInt("sliding_window"));
                case "chunked_attention" -> text.hasNonNull("attention_chunk_size")
                        ? AttentionWindow.chunked(requiredInt("attention_chunk_size")) : AttentionWindow.FULL;
                default -> throw new MoeException(where + ": layer_types[" + layer + "] '" + layerType + "' is not supported");
            };
            Rope rope = useRope ? Rope.of(text, headDim, maxPositions, interleaved, where) : null;
            return new GqaSpec(heads, kvHeads, headDim, bias, sinks, qkNorm, rope, window, temperature, scale);
        }

        /** The layer's attention type: {@code layer_types} when given, else the family's default. */
        private String layerType(int layer) {
            JsonNode types = text.path("layer_types");
            if (types.isArray()) {
                if (layer >= types.size()) {
                    throw new MoeException(where + ": layer_types has " + types.size() + " entries, fewer than the layers");
                }
                return types.get(layer).asText();
            }
            return switch (family) {
                case GPT_OSS -> (layer + 1) % 2 != 0 ? "sliding_attention" : "full_attention";
                case MIXTRAL -> text.hasNonNull("sliding_window") ? "sliding_attention" : "full_attention";
                case QWEN3_MOE -> text.path("use_sliding_window").asBoolean(false) && text.hasNonNull("sliding_window")
                        ? "sliding_attention" : "full_attention";
                case LLAMA4_TEXT -> noRopeLayerUsesRope(layer) ? "chunked_attention" : "full_attention";
                case DEEPSEEK_V3 -> "full_attention";
            };
        }

        /** Llama-4's {@code no_rope_layers}: despite the name, 1 marks a layer that uses RoPE. */
        private boolean noRopeLayerUsesRope(int layer) {
            JsonNode flags = text.path("no_rope_layers");
            if (flags.isArray() && !flags.isEmpty()) {
                if (layer >= flags.size()) {
                    throw new MoeException(where + ": no_rope_layers has " + flags.size() + " entries, fewer than the layers");
                }
                return flags.get(layer).asInt() != 0;
            }
            int interval = text.path("no_rope_layer_interval").asInt(4);
            return (layer + 1) % interval != 0;
        }

        /** transformers builds q_a_layernorm and kv_a_layernorm with RMSNorm's default eps, not rms_norm_eps. */
        private static final float LATENT_NORM_EPS = 1e-6f;

        private MlaSpec mla() {
            int heads = requiredInt("num_attention_heads");
            int qLora = text.hasNonNull("q_lora_rank") ? requiredInt("q_lora_rank") : 0;
            int kvLora = requiredInt("kv_lora_rank");
            int nope = requiredInt("qk_nope_head_dim");
            int ropeDim = requiredInt("qk_rope_head_dim");
            int vDim = requiredInt("v_head_dim");
            boolean interleaved = text.path("rope_interleave").asBoolean(true);
            Rope rope = Rope.of(text, ropeDim, requiredInt("max_position_embeddings"), interleaved, where);
            double scale = 1.0 / Math.sqrt(nope + ropeDim);
            JsonNode params = text.path("rope_parameters").isObject() ? text.path("rope_parameters") : text.path("rope_scaling");
            String type = params.isObject() ? params.path("rope_type").asText(params.path("type").asText("default")) : "default";
            if (!type.equals("default")) {
                double mscaleAllDim = params.path("mscale_all_dim").asDouble(0);
                if (mscaleAllDim != 0) {
                    double m = Rope.yarnMscale(params.path("factor").asDouble(), mscaleAllDim);
                    scale *= m * m;
                }
            }
            return new MlaSpec(heads, qLora, kvLora, nope, ropeDim, vDim, text.path("attention_bias").asBoolean(false),
                    rope, LATENT_NORM_EPS, (float) scale);
        }

        private int requiredInt(String key) {
            JsonNode n = text.get(key);
            if (!io.moe4j.config.ModelConfig.isInt(n)) {
                throw new MoeException(where + ": " + family.modelType() + " config needs an integer '" + key + "'");
            }
            return n.asInt();
        }
    }
}
