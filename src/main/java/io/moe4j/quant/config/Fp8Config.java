package io.moe4j.quant.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.method.Fp8Linear;
import io.moe4j.quant.method.HubFp8Method;

import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The hub's own FP8 format, {@code quant_method: fp8} (transformers' FineGrainedFP8, as DeepSeek-V3/R1 and
 * Qwen3-*-FP8 ship it): every Linear but {@code lm_head} and {@code modules_to_not_convert} is E4M3 with a
 * {@code weight_scale_inv} per {@code weight_block_size} block, and activations are quantized per token in groups of
 * the block's column size at run time ({@code activation_scheme: dynamic}). Experts load with {@link HubFp8Method},
 * dense linears with {@link Fp8Linear#hubBlock}.
 *
 * <p>A module is excluded, as transformers' {@code should_convert_module} decides, when an entry of
 * {@code modules_to_not_convert} matches its name from the start as a regular expression (so a plain entry also
 * excludes every module whose name it begins), or ends it.
 */
public final class Fp8Config extends QuantizationConfig {
    private final int[] blockSize;
    private final String activationScheme;
    private final List<String> notConverted;

    Fp8Config(ModelConfig model, JsonNode q) {
        super(model);
        String fmt = q.path("fmt").asText("e4m3").toLowerCase(Locale.ROOT);
        if (!fmt.equals("e4m3")) {
            throw new MoeException(model.source() + ": quantization_config fmt '" + fmt + "' is not supported (only e4m3)");
        }
        this.activationScheme = q.path("activation_scheme").asText("dynamic").toLowerCase(Locale.ROOT);
        JsonNode b = q.get("weight_block_size");
        if (b == null || b.isNull()) {
            this.blockSize = null;
        } else if (b.isArray() && b.size() == 2 && b.get(0).canConvertToInt() && b.get(1).canConvertToInt()
                && b.get(0).asInt() > 0 && b.get(1).asInt() > 0) {
            this.blockSize = new int[]{b.get(0).asInt(), b.get(1).asInt()};
        } else {
            throw new MoeException(model.source() + ": quantization_config weight_block_size must be two positive "
                    + "integers [block_n, block_k]; found " + b);
        }
        this.notConverted = strings(q.get("modules_to_not_convert"));
    }

    @Override
    public String quantMethod() {
        return "fp8";
    }

    public List<String> modulesToNotConvert() {
        return notConverted;
    }

    /** [block_n, block_k], or null for a checkpoint without blocks. */
    public int[] weightBlockSize() {
        return blockSize == null ? null : blockSize.clone();
    }

    /** lm_head, or a module {@code modules_to_not_convert} names. */
    public boolean excluded(String module) {
        if (module.equals("lm_head") || module.endsWith(".lm_head")) {
            return true;
        }
        for (String key : notConverted) {
            if (module.endsWith(key) || startsWithRegex(key, module)) {
                return true;
            }
        }
        return false;
    }

    /** Python's re.match(key, name); a key that is not a valid Java regex is taken as a literal prefix. */
    private static boolean startsWithRegex(String key, String name) {
        try {
            return Pattern.compile(key).matcher(name).lookingAt();
        } catch (PatternSyntaxException e) {
            return name.startsWith(key);
        }
    }

    private void requireSupported(String what) {
        if (blockSize == null) {
            throw new MoeException(model.source() + ": fp8 quantization_config without weight_block_size (per-tensor "
                    + "weights) is not supported for " + what + "; moe4j reads the block format");
        }
        if (!activationScheme.equals("dynamic")) {
            throw new MoeException(model.source() + ": fp8 quantization_config activation_scheme '" + activationScheme
                    + "' is not supported for " + what + " (block weights take dynamic activations)");
        }
    }

    @Override
    public QuantMethod methodFor(MoeLayerConfig layer) {
        List<String> modules = expertModules(layer);
        long excludedCount = modules.stream().filter(this::excluded).count();
        if (excludedCount == modules.size()) {
            return unquantized();
        }
        if (excludedCount > 0) {
            throw new IllegalArgumentException("Found different quantization schemes for " + modules
                    + ": some are in modules_to_not_convert; moe4j requires all expert projections to use the same");
        }
        requireSupported("the experts of layer " + layer.layer());
        requirePerExpertModules(layer, "fp8");
        return new HubFp8Method(blockSize);
    }

    @Override
    LinearMethod linearMethodOf(String module) {
        if (excluded(module)) {
            return unquantizedLinear();
        }
        requireSupported("linear '" + module + "'");
        return Fp8Linear.hubBlock(blockSize);
    }
}
