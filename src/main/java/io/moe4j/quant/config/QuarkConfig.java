package io.moe4j.quant.config;

import io.moe4j.quant.method.QuarkQuantSpec;
import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.ModelFamily;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.method.Fp8Linear;
import io.moe4j.quant.method.QuarkOcpMxMethod;
import io.moe4j.quant.method.QuarkW8A8Int8Method;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * AMD Quark's {@code quant_method: quark}. A module's spec is the first {@code layer_quant_config} entry whose name
 * pattern matches it, else its class in {@code layer_type_quant_config}, else {@code global_quant_config}; modules
 * matching {@code exclude} stay unquantized. Patterns are exact names, shell globs ({@code *mlp.gate}) or
 * {@code re:} regular expressions.
 *
 * <p>The MoE dispatch is vLLM's {@code QuarkMoEMethod.get_moe_method}: FP8 W4A8, FP8 W8A8, OCP MX weights (any
 * activation), INT8 W8A8 (static per-tensor or dynamic per-token input), in that order.
 */
public final class QuarkConfig extends QuantizationConfig {
    private final JsonNode q;
    private final List<String> exclude;

    QuarkConfig(ModelConfig model, JsonNode q) {
        super(model);
        this.q = q;
        if (q.get("export") == null || q.get("export").isNull()) {
            throw new IllegalArgumentException(
                    "The export key should be included in the configurations of Quark quantized model");
        }
        this.exclude = strings(q.get("exclude"));
    }

    @Override
    public String quantMethod() {
        return "quark";
    }

    public List<String> exclude() {
        return exclude;
    }

    @Override
    public QuantMethod methodFor(MoeLayerConfig layer) {
        List<String> modules = expertModules(layer);
        List<Boolean> excluded = modules.stream().map(m -> ModuleNames.anyExactGlobOrRegex(m, exclude)).toList();
        if (excluded.stream().allMatch(b -> b)) {
            return unquantized();
        }
        if (excluded.stream().anyMatch(b -> b)) {
            throw new IllegalArgumentException("Found a different quantization schemes for " + modules
                    + ". moe4j requires all expert projections to use the same scheme (some are in 'exclude').");
        }
        List<JsonNode> configs = new ArrayList<>();
        for (String m : modules) {
            configs.add(findMatchedConfig(m, layer));
        }
        for (JsonNode c : configs) {
            if (!c.equals(configs.get(0))) {
                throw new IllegalArgumentException("Found a different quantization configuration for " + modules
                        + " in " + layer.experts().expertsModule() + ". moe4j requires all to use the same scheme.");
            }
        }
        requirePerExpertModules(layer, "quark");
        return moeMethod(configs.get(0));
    }

    /** The class names a Quark export may key layer_type_quant_config by for a dense linear module. */
    private static final Set<String> LINEAR_TYPES = Set.of("Linear", "nn.Linear", "torch.nn.Linear",
            "torch.nn.modules.linear.Linear", "<class 'torch.nn.modules.linear.Linear'>");

    /**
     * The scheme of a dense linear: unquantized where {@code exclude} matches it, else its layer config's OCP MX,
     * INT8 W8A8 or FP8 W8A8 scheme (validated by the MoE methods' own constructors for the first two).
     */
    @Override
    LinearMethod linearMethodOf(String module) {
        if (ModuleNames.anyExactGlobOrRegex(module, exclude)) {
            return unquantizedLinear();
        }
        JsonNode c = findMatchedConfig(module, LINEAR_TYPES);
        JsonNode out = c.get("output_tensors");
        JsonNode bias = c.get("bias");
        if ((out != null && !out.isNull()) || (bias != null && !bias.isNull())) {
            throw new IllegalArgumentException("Quark linears with output_tensors or bias quantized are not supported");
        }
        JsonNode weightNode = c.get("weight");
        if (weightNode == null || weightNode.isNull()) {
            return unquantizedLinear();
        }
        if (weightNode.isArray()) {
            throw new MoeException("quark: a list of weight specs (" + weightNode + ") for linear '" + module
                    + "' is not supported by moe4j");
        }
        QuarkQuantSpec weight = QuarkQuantSpec.of(weightNode);
        QuarkQuantSpec input = QuarkQuantSpec.of(c.get("input_tensors"));
        if (isOcpMx(weight)) {
            return new QuarkOcpMxMethod(weight, input).linear();
        }
        if (isStaticTensorW8a8(weight, input) || isDynamicPerTokenW8a8(weight, input)) {
            return new QuarkW8A8Int8Method(weight, input).linear();
        }
        if (isFp8W8a8(weight, input)) {
            return Fp8Linear.quark("per_channel".equals(weight.qscheme()), !input.dynamic());
        }
        throw new MoeException("quark scheme of linear '" + module + "' is not supported by moe4j: weight " + weight
                + ", input_tensors " + input);
    }

    /** The layer config of one module: layer_quant_config pattern, then layer_type_quant_config, then global. */
    JsonNode findMatchedConfig(String module, MoeLayerConfig layer) {
        return findMatchedConfig(module, typeNames(layer));
    }

    private JsonNode findMatchedConfig(String module, Set<String> types) {
        JsonNode byName = q.get("layer_quant_config");
        if (byName != null && byName.isObject()) {
            for (Map.Entry<String, JsonNode> e : byName.properties()) {
                if (ModuleNames.exactGlobOrRegex(module, e.getKey())) {
                    return e.getValue();
                }
            }
        }
        JsonNode byType = q.get("layer_type_quant_config");
        if (byType != null && byType.isObject()) {
            for (Map.Entry<String, JsonNode> e : byType.properties()) {
                if (types.contains(e.getKey())) {
                    return e.getValue();
                }
            }
        }
        JsonNode global = q.get("global_quant_config");
        if (global == null || !global.isObject()) {
            throw new MoeException(model.source() + ": quark quantization_config has no global_quant_config and no "
                    + "layer_quant_config entry for " + module);
        }
        return global;
    }

    /** The class names a Quark export may key layer_type_quant_config by, for this layer's expert modules. */
    private static Set<String> typeNames(MoeLayerConfig layer) {
        if (!layer.experts().fused()) {
            return Set.of("Linear", "nn.Linear", "torch.nn.Linear", "torch.nn.modules.linear.Linear",
                    "<class 'torch.nn.modules.linear.Linear'>");
        }
        return layer.family() == ModelFamily.GPT_OSS ? Set.of("GptOssExperts") : Set.of("Llama4TextExperts");
    }

    /** vLLM's QuarkMoEMethod.get_moe_method, on one layer config. */
    QuantMethod moeMethod(JsonNode layerConfig) {
        JsonNode out = layerConfig.get("output_tensors");
        JsonNode bias = layerConfig.get("bias");
        if ((out != null && !out.isNull()) || (bias != null && !bias.isNull())) {
            throw new IllegalArgumentException(
                    "Currently, Quark models with output_tensors and bias quantized are not supported");
        }
        JsonNode weightNode = layerConfig.get("weight");
        JsonNode inputNode = layerConfig.get("input_tensors");
        if (weightNode != null && weightNode.isArray()) {
            throw new MoeException("quark: a list of weight specs (" + weightNode + ", the FP8 W4A8 scheme of "
                    + "QuarkW4A8Fp8MoEMethod) is not supported by moe4j");
        }
        QuarkQuantSpec weight = QuarkQuantSpec.of(weightNode);
        QuarkQuantSpec input = QuarkQuantSpec.of(inputNode);
        if (isFp8W8a8(weight, input)) {
            throw new MoeException("quark: FP8 W8A8 MoE layers (QuarkW8A8Fp8MoEMethod) are not supported by moe4j: weight "
                    + weight + ", input_tensors " + input);
        }
        if (isOcpMx(weight)) {
            return ocpMx(weight, input);
        }
        if (isStaticTensorW8a8(weight, input) || isDynamicPerTokenW8a8(weight, input)) {
            return int8(weight, input);
        }
        throw new MoeException("quark: Unsupported FusedMoe scheme: weight " + weight + ", input_tensors " + input);
    }

    QuantMethod ocpMx(QuarkQuantSpec weight, QuarkQuantSpec input) {
        return new QuarkOcpMxMethod(weight, input);
    }

    QuantMethod int8(QuarkQuantSpec weight, QuarkQuantSpec input) {
        return new QuarkW8A8Int8Method(weight, input);
    }

    static boolean isFp8W8a8(QuarkQuantSpec w, QuarkQuantSpec in) {
        if (w == null || in == null) {
            return false;
        }
        boolean fp8 = "fp8_e4m3".equals(w.dtype()) && "fp8_e4m3".equals(in.dtype());
        boolean staticWeight = !w.dynamic();
        boolean tensorOrChannel = "per_tensor".equals(w.qscheme()) || "per_channel".equals(w.qscheme());
        if (!(fp8 && staticWeight && tensorOrChannel)) {
            return false;
        }
        return in.dynamic() || "per_tensor".equals(in.qscheme());
    }

    /** OCP MX weights (any activation): per_group, groups of 32, e8m0 scales, fp4 / fp6 elements. */
    static boolean isOcpMx(QuarkQuantSpec w) {
        return w != null && "per_group".equals(w.qscheme()) && w.groupSize() != null && w.groupSize() == 32
                && "e8m0".equals(w.scaleFormat()) && Set.of("fp4", "fp6_e3m2", "fp6_e2m3").contains(w.dtype());
    }

    static boolean isStaticTensorW8a8(QuarkQuantSpec w, QuarkQuantSpec in) {
        if (w == null || in == null) {
            return false;
        }
        boolean int8 = "int8".equals(w.dtype()) && "int8".equals(in.dtype());
        boolean tensor = ("per_tensor".equals(w.qscheme()) || "per_channel".equals(w.qscheme()))
                && "per_tensor".equals(in.qscheme());
        boolean isStatic = !w.dynamic() && !in.dynamic();
        return int8 && tensor && isStatic && Boolean.TRUE.equals(w.symmetric());
    }

    static boolean isDynamicPerTokenW8a8(QuarkQuantSpec w, QuarkQuantSpec in) {
        if (w == null || in == null) {
            return false;
        }
        boolean int8 = "int8".equals(w.dtype()) && "int8".equals(in.dtype());
        boolean weightScheme = "per_tensor".equals(w.qscheme()) || "per_channel".equals(w.qscheme());
        // Quark writes a per-token input spec as per_channel on the token axis.
        boolean perToken = "per_channel".equals(in.qscheme());
        return int8 && weightScheme && perToken && in.dynamic() && Boolean.TRUE.equals(w.symmetric());
    }
}
