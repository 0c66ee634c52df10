package io.moe4j.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import io.moe4j.activation.Activation;
import io.moe4j.routing.RouterKind;
import io.moe4j.routing.RouterSpec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A Hugging Face {@code config.json} as far as the MoE layers go: the family, how many layers there are, which
 * are MoE, and for each the sizes, router and activation. The raw JSON is kept for the quantization config.
 */
public final class ModelConfig {
    private final Path source;
    private final JsonNode root;
    private final JsonNode text;
    private final ModelFamily family;
    private final String layersPrefix;

    private ModelConfig(Path source, JsonNode root) {
        this.source = source;
        this.root = root;
        ModelFamily f = ModelFamily.of(root.path("model_type").asText(null), source.toString());
        // Multimodal Llama-4 nests its language model: its MoE layers live under language_model.
        if (f == ModelFamily.LLAMA4_TEXT && root.has("text_config")) {
            this.text = root.get("text_config");
            this.layersPrefix = "language_model.model.layers.";
        } else {
            this.text = root;
            this.layersPrefix = "model.layers.";
        }
        this.family = f;
    }

    /** Reads {@code config.json} from a checkpoint directory (or the directory of a .safetensors file). */
    public static ModelConfig load(Path checkpoint) {
        if (!Files.exists(checkpoint)) {
            throw new MoeException(checkpoint + ": no such file or directory");
        }
        Path dir = Files.isDirectory(checkpoint) ? checkpoint : checkpoint.toAbsolutePath().getParent();
        Path file = dir.resolve("config.json");
        if (!Files.isRegularFile(file)) {
            throw new MoeException(file + ": missing (a checkpoint directory needs its config.json)");
        }
        try {
            JsonNode root = new ObjectMapper().readTree(file.toFile());
            if (root == null || !root.isObject()) {
                throw new MoeException(file + ": not a JSON object");
            }
            return new ModelConfig(file, root);
        } catch (IOException e) {
            throw new MoeException(file + ": not valid JSON: " + JsonErrors.describe(e));
        }
    }

    public static ModelConfig parse(Path source, JsonNode root) {
        return new ModelConfig(source, root);
    }

    public Path source() {
        return source;
    }

    public ModelFamily family() {
        return family;
    }

    /** The whole config.json (the quantization config sits at its top level). */
    public JsonNode json() {
        return root;
    }

    public int hiddenSize() {
        return requiredInt("hidden_size");
    }

    public int numLayers() {
        return requiredInt("num_hidden_layers");
    }

    public boolean isMoeLayer(int layer) {
        return switch (family) {
            case MIXTRAL, GPT_OSS -> true;
            case QWEN3_MOE -> {
                Set<Integer> dense = new HashSet<>();
                text.path("mlp_only_layers").forEach(n -> dense.add(n.asInt()));
                int step = text.path("decoder_sparse_step").asInt(1);
                yield !dense.contains(layer) && qwen3Experts() > 0 && step > 0 && (layer + 1) % step == 0;
            }
            case DEEPSEEK_V3 -> {
                int firstDense = text.path("first_k_dense_replace").asInt(0);
                int freq = text.path("moe_layer_freq").asInt(1);
                yield text.path("n_routed_experts").asInt(0) > 0 && layer >= firstDense && layer % freq == 0;
            }
            case LLAMA4_TEXT -> {
                if (text.has("moe_layers") && text.get("moe_layers").isArray()) {
                    boolean found = false;
                    for (JsonNode n : text.get("moe_layers")) {
                        found |= n.asInt() == layer;
                    }
                    yield found;
                }
                int step = text.path("interleave_moe_layer_step").asInt(1);
                yield step > 0 && (layer + 1) % step == 0;
            }
        };
    }

    public List<Integer> moeLayers() {
        List<Integer> out = new ArrayList<>();
        for (int l = 0; l < numLayers(); l++) {
            if (isMoeLayer(l)) {
                out.add(l);
            }
        }
        return out;
    }

    /** The MoE layer at {@code layer}; fails naming the layer when it is out of range or dense. */
    public MoeLayerConfig layer(int layer) {
        if (layer < 0 || layer >= numLayers()) {
            throw new MoeException(source + ": layer " + layer + " is out of range (num_hidden_layers = " + numLayers() + ")");
        }
        if (!isMoeLayer(layer)) {
            throw new MoeException(source + ": layer " + layer + " is a dense layer, not MoE (MoE layers: " + moeLayers() + ")");
        }
        String base = layersPrefix + layer + ".";
        int hidden = hiddenSize();
        return switch (family) {
            case MIXTRAL -> {
                String block = base + "block_sparse_moe.";
                yield new MoeLayerConfig(family, layer, hidden, requiredInt("intermediate_size"),
                        RouterSpec.simple(RouterKind.SOFTMAX_TOPK, requiredInt("num_local_experts"),
                                topK("num_experts_per_tok", requiredInt("num_local_experts")), true),
                        activation(), 0f, new ExpertNaming(block, block + "experts.", false, "w1", "w3", "w2"),
                        block + "gate.weight", null, null, false, false, false, null);
            }
            case QWEN3_MOE -> {
                String block = base + "mlp.";
                yield new MoeLayerConfig(family, layer, hidden, requiredInt("moe_intermediate_size"),
                        RouterSpec.simple(RouterKind.SOFTMAX_TOPK, qwen3Experts(),
                                topK("num_experts_per_tok", qwen3Experts()), text.path("norm_topk_prob").asBoolean(false)),
                        activation(), 0f, perExpert(block), block + "gate.weight", null, null, false, false, false, null);
            }
            case DEEPSEEK_V3 -> {
                String block = base + "mlp.";
                String scoring = text.path("scoring_func").asText("sigmoid");
                if (!scoring.equals("sigmoid")) {
                    throw new MoeException(source + ": deepseek_v3 scoring_func '" + scoring + "' is not supported (only sigmoid)");
                }
                int moeI = requiredInt("moe_intermediate_size");
                int nShared = text.path("n_shared_experts").asInt(0);
                RouterSpec router = new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, requiredInt("n_routed_experts"),
                        topK("num_experts_per_tok", requiredInt("n_routed_experts")),
                        text.path("norm_topk_prob").asBoolean(true),
                        text.path("n_group").asInt(1), text.path("topk_group").asInt(1),
                        text.path("routed_scaling_factor").asDouble(1.0));
                yield new MoeLayerConfig(family, layer, hidden, moeI, router, activation(), 0f, perExpert(block),
                        block + "gate.weight", null, block + "gate.e_score_correction_bias", false, false, false,
                        nShared > 0 ? new MoeLayerConfig.SharedExpert(block + "shared_experts.", moeI * nShared) : null);
            }
            case GPT_OSS -> {
                String block = base + "mlp.";
                int topK = topK(text.has("experts_per_token") ? "experts_per_token" : "num_experts_per_tok",
                        requiredInt("num_local_experts"));
                yield new MoeLayerConfig(family, layer, hidden, requiredInt("intermediate_size"),
                        RouterSpec.simple(RouterKind.TOPK_SOFTMAX, requiredInt("num_local_experts"), topK, false),
                        Activation.SWIGLU_OAI, (float) text.path("swiglu_limit").asDouble(Activation.OAI_LIMIT),
                        new ExpertNaming(block, block + "experts.", true, "gate_proj", "up_proj", "down_proj"),
                        block + "router.weight", block + "router.bias", null, true, true, true, null);
            }
            case LLAMA4_TEXT -> {
                String block = base + "feed_forward.";
                yield new MoeLayerConfig(family, layer, hidden, requiredInt("intermediate_size"),
                        RouterSpec.simple(RouterKind.SIGMOID_TOP1_ON_INPUT, requiredInt("num_local_experts"),
                                topK("num_experts_per_tok", requiredInt("num_local_experts")), false),
                        activation(), 0f,
                        new ExpertNaming(block, block + "experts.", true, "gate_proj", "up_proj", "down_proj"),
                        block + "router.weight", null, null, false, true, false,
                        new MoeLayerConfig.SharedExpert(block + "shared_expert.", requiredInt("intermediate_size")));
            }
        };
    }

    /** The experts a token is routed to, from {@code key}: 1 to {@code experts}, or an error naming the key. */
    private int topK(String key, int experts) {
        int k = requiredInt(key);
        if (k < 1 || k > experts) {
            throw new MoeException(source + ": " + key + " " + k + " must be in [1, " + experts + "] (the experts a"
                    + " layer has)");
        }
        return k;
    }

    /** Qwen3-MoE's expert count: {@code num_experts} on the hub, {@code num_local_experts} as transformers v5 saves it. */
    private int qwen3Experts() {
        return text.has("num_experts") || !text.has("num_local_experts") ? requiredInt("num_experts")
                : requiredInt("num_local_experts");
    }

    private static ExpertNaming perExpert(String block) {
        return new ExpertNaming(block, block + "experts.", false, "gate_proj", "up_proj", "down_proj");
    }

    private Activation activation() {
        String act = text.path("hidden_act").asText("silu");
        return switch (act) {
            case "silu", "swish" -> Activation.SILU_AND_MUL;
            case "gelu" -> Activation.GELU_AND_MUL;
            case "gelu_pytorch_tanh", "gelu_new", "gelu_tanh" -> Activation.GELU_TANH_AND_MUL;
            case "relu2" -> Activation.RELU2_AND_MUL;
            default -> throw new MoeException(source + ": hidden_act '" + act + "' is not supported for MoE experts");
        };
    }

    private int requiredInt(String key) {
        JsonNode n = text.get(key);
        if (!isInt(n)) {
            throw new MoeException(source + ": " + family.modelType() + " config needs an integer '" + key + "'");
        }
        return n.asInt();
    }

    /** Whether a config value is a whole number within int's range (2 and 2.0 are, 2.5 and "2" are not). */
    public static boolean isInt(JsonNode n) {
        return n != null && n.isNumber() && n.canConvertToInt() && n.asDouble() == Math.rint(n.asDouble());
    }
}
