package io.moe4j.quant.config;

import io.moe4j.quant.method.CtQuantArgs;
import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.method.CtFp8Method;
import io.moe4j.quant.method.CtNvfp4Method;
import io.moe4j.quant.method.CtW4A8IntMethod;
import io.moe4j.quant.method.CtWNA16Method;
import io.moe4j.quant.method.Fp8Linear;
import io.moe4j.quant.method.Int8Linear;
import io.moe4j.quant.method.Nvfp4Linear;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * compressed-tensors ({@code quant_method: compressed-tensors}, written by llm-compressor). Each config group names
 * its {@code targets} (module class names such as {@code Linear}, exact module names, or {@code re:} regexes) and
 * gives weight and input-activation args; a group's {@code format} overrides the top-level one. Modules matching
 * {@code ignore} stay unquantized. For formats that do not quantize activations ({@code pack-quantized}) the input
 * args are dropped, as vLLM does.
 *
 * <p>The MoE dispatch is vLLM's {@code CompressedTensorsMoEMethod.get_moe_method}: WNA16 (pack-quantized int4/int8,
 * channel or group), NVFP4 (W4A4 or W4A16), FP8 W8A8, INT8 W8A8, FP8 W4A8, INT W4A8, in that order.
 */
public final class CompressedTensorsConfig extends QuantizationConfig {
    /** Formats whose checkpoints quantize activations (compressed-tensors' is_activation_quantization_format). */
    static final Set<String> ACTIVATION_FORMATS = Set.of("naive-quantized", "int-quantized", "float-quantized",
            "nvfp4-pack-quantized", "mxfp4-pack-quantized");
    public static final String PACK_QUANTIZED = "pack-quantized";
    /** WNA16_SUPPORTED_BITS. */
    public static final List<Integer> WNA16_SUPPORTED_BITS = List.of(4, 8);

    /** One config group as it applies to a module. */
    public record Scheme(String group, List<String> targets, CtQuantArgs weights, CtQuantArgs inputActivations,
                         String format) {
        boolean sameScheme(Scheme o) {
            return Objects.equals(weights, o.weights) && Objects.equals(inputActivations, o.inputActivations)
                    && Objects.equals(format, o.format);
        }
    }

    private final String format;
    private final List<String> ignore;
    private final Map<String, Scheme> groups = new LinkedHashMap<>();

    CompressedTensorsConfig(ModelConfig model, JsonNode q) {
        super(model);
        this.format = q.hasNonNull("format") ? q.get("format").asText() : null;
        this.ignore = strings(q.get("ignore"));
        JsonNode cg = q.get("config_groups");
        if (cg != null && cg.isObject()) {
            for (Map.Entry<String, JsonNode> e : cg.properties()) {
                JsonNode g = e.getValue();
                String fmt = g.hasNonNull("format") ? g.get("format").asText() : format;
                CtQuantArgs w = CtQuantArgs.of(g.get("weights"));
                CtQuantArgs in = CtQuantArgs.of(g.get("input_activations"));
                if (fmt != null && !ACTIVATION_FORMATS.contains(fmt)) {
                    in = null;
                }
                groups.put(e.getKey(), new Scheme(e.getKey(), strings(g.get("targets")), w, in, fmt));
            }
        }
    }

    @Override
    public String quantMethod() {
        return "compressed-tensors";
    }

    public List<String> ignore() {
        return ignore;
    }

    public Map<String, Scheme> groups() {
        return groups;
    }

    @Override
    public QuantMethod methodFor(MoeLayerConfig layer) {
        List<String> modules = expertModules(layer);
        List<Scheme> schemes = new ArrayList<>();
        for (String m : modules) {
            schemes.add(schemeFor(m));
        }
        Scheme first = schemes.get(0);
        for (Scheme s : schemes) {
            if ((s == null) != (first == null) || (s != null && !s.sameScheme(first))) {
                throw new IllegalArgumentException(
                        "All MoE projections need to have same quantization scheme but found multiple (" + modules + ")");
            }
        }
        if (first == null || first.weights() == null) {
            return unquantized();
        }
        requirePerExpertModules(layer, "compressed-tensors");
        return moeMethod(first, layer);
    }

    /**
     * The group that applies to a module, or null when it is ignored or no group targets it. HF Mixtral names its
     * experts {@code block_sparse_moe.experts} where vLLM says {@code mlp.experts}; configs written against either
     * match.
     */
    Scheme schemeFor(String module) {
        List<String> candidates = new ArrayList<>(List.of(module));
        if (module.contains(".block_sparse_moe.experts")) {
            candidates.add(module.replace(".block_sparse_moe.experts", ".mlp.experts"));
        } else if (module.contains(".mlp.experts")) {
            candidates.add(module.replace(".mlp.experts", ".block_sparse_moe.experts"));
        }
        for (String c : candidates) {
            if (ModuleNames.anyExactOrRegex(c, ignore)) {
                return null;
            }
        }
        for (String c : candidates) {
            for (Scheme s : groups.values()) {
                if (ModuleNames.anyExactOrRegex(c, s.targets())) {
                    return s;
                }
            }
        }
        // Expert projections are Linear modules (vLLM maps FusedMoE to the Linear targets too).
        for (Scheme s : groups.values()) {
            if (s.targets().contains("Linear") || s.targets().contains("FusedMoE")) {
                return s;
            }
        }
        return null;
    }

    /**
     * The scheme of a dense linear: the same dispatch as the experts' where a linear can run it (WNA16, NVFP4, FP8
     * W8A8 or W8A16, INT8 W8A8), each built by its MoE method's {@code linear()} or alike so the validation is shared.
     */
    @Override
    LinearMethod linearMethodOf(String module) {
        Scheme s = schemeFor(module);
        if (s == null || s.weights() == null) {
            return unquantizedLinear();
        }
        CtQuantArgs w = s.weights();
        CtQuantArgs in = s.inputActivations();
        if (isWna16GroupChannel(w, in)) {
            if (!(WNA16_SUPPORTED_BITS.contains(w.numBits()) && PACK_QUANTIZED.equals(s.format()))) {
                throw new IllegalArgumentException("only format " + PACK_QUANTIZED + " with bits " + WNA16_SUPPORTED_BITS
                        + " is supported for weight-only int linears, but got format " + s.format() + " and bits "
                        + w.numBits());
            }
            return new CtWNA16Method(w).linear();
        }
        if (w.isNvfp4()) {
            if (!(in == null || in.isNvfp4())) {
                throw new IllegalArgumentException("for NVFP4 weights, input quantization must also be NVFP4 or None "
                        + "(NVFP4A16), found " + in);
            }
            return new Nvfp4Linear(in == null);
        }
        if (w.isFloat() && w.numBits() == 8 && w.symmetric() && !w.dynamic()
                && (in == null || (in.isFloat() && in.numBits() == 8 && in.symmetric()))) {
            return Fp8Linear.compressedTensors(w, in);
        }
        if (w.isInt() && w.numBits() == 8 && w.symmetric() && in != null && in.isInt() && in.numBits() == 8
                && in.symmetric() && (CtQuantArgs.TENSOR.equals(w.strategy()) || CtQuantArgs.CHANNEL.equals(w.strategy()))
                && (in.dynamic() ? CtQuantArgs.TOKEN.equals(in.strategy()) : CtQuantArgs.TENSOR.equals(in.strategy()))) {
            return new Int8Linear("compressed-tensors", CtQuantArgs.CHANNEL.equals(w.strategy()), !in.dynamic());
        }
        if (isDynamicTokenW4a8Int(w, in)) {
            return new CtW4A8IntMethod(w, in).linear();
        }
        throw new MoeException("compressed-tensors scheme of linear '" + module + "' is not supported by moe4j: weights "
                + w + ", input_activations " + in + " (format " + s.format() + ")");
    }

    /** vLLM's CompressedTensorsMoEMethod.get_moe_method, on one scheme. */
    QuantMethod moeMethod(Scheme s, MoeLayerConfig layer) {
        CtQuantArgs w = s.weights();
        CtQuantArgs in = s.inputActivations();
        if (isWna16GroupChannel(w, in)) {
            if (!(WNA16_SUPPORTED_BITS.contains(w.numBits()) && PACK_QUANTIZED.equals(s.format()))) {
                throw new IllegalArgumentException("For Fused MoE layers, only format: " + PACK_QUANTIZED
                        + " and bits: " + WNA16_SUPPORTED_BITS + " is supported but got format: " + s.format()
                        + " and bits: " + w.numBits());
            }
            return wna16(w);
        }
        if (w.isNvfp4()) {
            if (!(in == null || in.isNvfp4())) {
                throw new IllegalArgumentException("For NVFP4 weights, input quantization must also be NVFP4 format or "
                        + "None for NVFP4A16, found " + in);
            }
            return nvfp4(in == null);
        }
        if (isFp8W8a8(w, in)) {
            return fp8(w, in);
        }
        if (isDynamicTokenW8a8(w, in)) {
            throw new MoeException("compressed-tensors: INT8 W8A8 MoE layers (CompressedTensorsW8A8Int8MoEMethod) are not "
                    + "supported by moe4j: weights " + w + ", input_activations " + in);
        }
        if (isFp8W4a8(w, in)) {
            throw new MoeException("compressed-tensors: FP8 W4A8 MoE layers (CompressedTensorsW4A8Fp8MoEMethod) are not "
                    + "supported by moe4j: weights " + w + ", input_activations " + in);
        }
        if (isDynamicTokenW4a8Int(w, in)) {
            return w4a8Int(w, in);
        }
        throw new MoeException("compressed-tensors: Unsupported FusedMoe scheme: weights " + w + ", input_activations " + in);
    }

    QuantMethod wna16(CtQuantArgs w) {
        return new CtWNA16Method(w);
    }

    QuantMethod nvfp4(boolean a16) {
        return new CtNvfp4Method(a16);
    }

    QuantMethod fp8(CtQuantArgs w, CtQuantArgs in) {
        return new CtFp8Method(w, in);
    }

    QuantMethod w4a8Int(CtQuantArgs w, CtQuantArgs in) {
        return new CtW4A8IntMethod(w, in);
    }

    static boolean isWna16GroupChannel(CtQuantArgs w, CtQuantArgs in) {
        boolean channelGroup = CtQuantArgs.CHANNEL.equals(w.strategy()) || CtQuantArgs.GROUP.equals(w.strategy());
        return in == null && channelGroup && !w.dynamic();
    }

    static boolean isFp8W8a8(CtQuantArgs w, CtQuantArgs in) {
        if (w == null || in == null) {
            return false;
        }
        boolean floats = w.isFloat() && in.isFloat();
        boolean weightOk = w.numBits() == 8 && in.numBits() == 8 && w.symmetric() && !w.dynamic()
                && Set.of(CtQuantArgs.TENSOR, CtQuantArgs.CHANNEL, CtQuantArgs.BLOCK).contains(w.strategy());
        if (!(floats && weightOk)) {
            return false;
        }
        if (in.dynamic()) {
            return true;
        }
        return in.symmetric() && CtQuantArgs.TENSOR.equals(in.strategy());
    }

    static boolean isDynamicTokenW8a8(CtQuantArgs w, CtQuantArgs in) {
        if (w == null || in == null) {
            return false;
        }
        boolean bits = w.numBits() == 8 && in.numBits() == 8;
        boolean token = (CtQuantArgs.TENSOR.equals(w.strategy()) || CtQuantArgs.CHANNEL.equals(w.strategy()))
                && CtQuantArgs.TOKEN.equals(in.strategy());
        return bits && token && w.symmetric() && !w.dynamic() && in.dynamic();
    }

    static boolean isFp8W4a8(CtQuantArgs w, CtQuantArgs in) {
        if (w == null || in == null) {
            return false;
        }
        return w.numBits() == 4 && w.isInt() && in.numBits() == 8 && in.isFloat() && w.symmetric() && !w.dynamic()
                && CtQuantArgs.GROUP.equals(w.strategy());
    }

    static boolean isDynamicTokenW4a8Int(CtQuantArgs w, CtQuantArgs in) {
        if (w == null || in == null) {
            return false;
        }
        boolean strategy = (CtQuantArgs.GROUP.equals(w.strategy()) || CtQuantArgs.CHANNEL.equals(w.strategy()))
                && CtQuantArgs.TOKEN.equals(in.strategy());
        return w.numBits() == 4 && in.numBits() == 8 && strategy && w.symmetric() && !w.dynamic() && in.dynamic();
    }
}
