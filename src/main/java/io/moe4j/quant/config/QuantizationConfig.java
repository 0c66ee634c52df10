package io.moe4j.quant.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.WeightFormat;
import io.moe4j.quant.method.UnquantizedLinear;
import io.moe4j.quant.method.UnquantizedMethod;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The {@code quantization_config} of a model's config.json, by producer: AMD Quark, compressed-tensors (llm-compressor),
 * gpt-oss {@code mxfp4}, or none. Its one job is {@link #methodFor}: find the scheme the config gives a layer's expert
 * modules and build the {@link QuantMethod} for it (the method validates the scheme when constructed).
 */
public abstract sealed class QuantizationConfig
        permits QuarkConfig, CompressedTensorsConfig, Mxfp4Config, Fp8Config, QuantizationConfig.None {

    /** The {@code quant_method} values moe4j reads. */
    public static final List<String> SUPPORTED = List.of("quark", "compressed-tensors", "mxfp4", "fp8");

    protected final ModelConfig model;

    QuantizationConfig(ModelConfig model) {
        this.model = model;
    }

    /** The quantization config of a model: its {@code quantization_config}, or none when absent. */
    public static QuantizationConfig of(ModelConfig model) {
        JsonNode q = model.json().get("quantization_config");
        if (q == null || q.isNull()) {
            JsonNode text = model.json().get("text_config");
            q = text == null ? null : text.get("quantization_config");
        }
        if (q == null || q.isNull()) {
            return new None(model);
        }
        if (!q.isObject()) {
            throw new MoeException(model.source() + ": quantization_config is not a JSON object");
        }
        String method = q.path("quant_method").asText("");
        return switch (method.toLowerCase(Locale.ROOT)) {
            case "quark" -> new QuarkConfig(model, q);
            case "compressed-tensors", "compressed_tensors" -> new CompressedTensorsConfig(model, q);
            case "mxfp4" -> new Mxfp4Config(model, q);
            case "fp8" -> new Fp8Config(model, q);
            default -> throw new MoeException(model.source() + ": quantization_config quant_method '" + method
                    + "' is not supported (supported: " + String.join(", ", SUPPORTED) + ", or no quantization_config)");
        };
    }

    /** {@code quark}, {@code compressed-tensors}, {@code mxfp4} or {@code none}. */
    public abstract String quantMethod();

    /** The method that loads the experts of this MoE layer; fails with the seed's message for a scheme it refuses. */
    public abstract QuantMethod methodFor(MoeLayerConfig layer);

    /**
     * The method of the dense linear module {@code module} (e.g. {@code model.layers.0.self_attn.q_proj},
     * {@code lm_head}): the scheme the config gives it, or unquantized where the config excludes it or quantizes
     * only experts. Fails naming the module and the scheme when the scheme is one moe4j cannot run for a linear.
     */
    public final LinearMethod linearMethod(String module) {
        if (module.equals("embed_tokens") || module.endsWith(".embed_tokens")) {
            // An embedding is no Linear, so no producer's Linear targets quantize it; a decoder may still multiply
            // with it as a tied lm_head.
            return unquantizedLinear();
        }
        try {
            return linearMethodOf(module);
        } catch (IllegalArgumentException e) {
            throw new MoeException(model.source() + ": " + quantMethod() + " scheme of linear '" + module + "': "
                    + e.getMessage(), e);
        }
    }

    abstract LinearMethod linearMethodOf(String module);

    /** The unquantized linear, with the weight dtype the model config declares (the tensor decides at load). */
    protected UnquantizedLinear unquantizedLinear() {
        return new UnquantizedLinear(declaredDtype(model));
    }

    /** The unquantized method, with the weight dtype the model config declares. */
    protected UnquantizedMethod unquantized() {
        return new UnquantizedMethod(declaredDtype(model));
    }

    /** torch_dtype (or dtype) of the model config: bf16 unless it says float16 / float32. */
    static WeightFormat declaredDtype(ModelConfig model) {
        JsonNode root = model.json();
        String d = root.path("torch_dtype").asText(root.path("dtype").asText(
                root.path("text_config").path("torch_dtype").asText("bfloat16")));
        return switch (d.toLowerCase(Locale.ROOT).replace("torch.", "")) {
            case "float16", "half", "fp16" -> WeightFormat.F16;
            case "float32", "float", "fp32" -> WeightFormat.F32;
            default -> WeightFormat.BF16;
        };
    }

    /**
     * The module names a config's patterns are matched against for this layer's experts: expert 0's projections for
     * per-expert families (every expert has the same scheme in all supported producers' exports), the experts
     * module itself for fused families.
     */
    static List<String> expertModules(MoeLayerConfig layer) {
        if (layer.experts().fused()) {
            return List.of(layer.experts().expertsModule());
        }
        List<String> out = new ArrayList<>();
        if (layer.activation().gated()) {
            out.add(layer.experts().module(0, Projection.GATE));
        }
        out.add(layer.experts().module(0, Projection.UP));
        out.add(layer.experts().module(0, Projection.DOWN));
        return out;
    }

    /**
     * Quark and compressed-tensors MoE methods read per-expert modules; a quantized fused-expert layer (gpt-oss,
     * Llama-4) has no agreed tensor layout in those producers' exports, so it is refused here, before any loading.
     */
    void requirePerExpertModules(MoeLayerConfig layer, String producer) {
        if (layer.experts().fused()) {
            throw new MoeException(model.source() + ": " + producer + "-quantized experts of " + layer.family().modelType()
                    + " (fused tensors " + layer.experts().fusedTensor("gate_up_proj") + ", ...) are not supported; "
                    + producer + " MoE methods read per-expert modules (experts.<e>.<proj>)");
        }
    }

    static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        if (array != null && array.isArray()) {
            array.forEach(n -> out.add(n.asText()));
        } else if (array != null && array.isTextual()) {
            out.add(array.asText());
        }
        return out;
    }

    @Override
    public String toString() {
        return quantMethod();
    }

    /** No quantization_config: every MoE layer is unquantized. */
    public static final class None extends QuantizationConfig {
        None(ModelConfig model) {
            super(model);
        }

        @Override
        public String quantMethod() {
            return "none";
        }

        @Override
        public QuantMethod methodFor(MoeLayerConfig layer) {
            return unquantized();
        }

        @Override
        LinearMethod linearMethodOf(String module) {
            return unquantizedLinear();
        }
    }
}
