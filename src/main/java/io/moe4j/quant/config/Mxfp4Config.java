package io.moe4j.quant.config;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.ModelFamily;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.method.GptOssMxfp4Method;

import java.util.List;

/**
 * gpt-oss's own {@code quant_method: mxfp4}: every expert stack is MXFP4 ({@code *_blocks} / {@code *_scales})
 * unless the experts module is listed in {@code modules_to_not_convert}.
 */
public final class Mxfp4Config extends QuantizationConfig {
    private final List<String> notConverted;

    Mxfp4Config(ModelConfig model, JsonNode q) {
        super(model);
        this.notConverted = strings(q.get("modules_to_not_convert"));
    }

    @Override
    public String quantMethod() {
        return "mxfp4";
    }

    public List<String> modulesToNotConvert() {
        return notConverted;
    }

    @Override
    public QuantMethod methodFor(MoeLayerConfig layer) {
        String experts = layer.experts().expertsModule();
        if (excluded(experts)) {
            return unquantized();
        }
        if (layer.family() != ModelFamily.GPT_OSS || !layer.experts().fused()) {
            throw new MoeException(model.source() + ": quant_method mxfp4 is gpt-oss's checkpoint format; model_type '"
                    + layer.family().modelType() + "' is not supported with it");
        }
        return gptOssMxfp4();
    }

    /** gpt-oss's mxfp4 quantizes the routed experts only: every dense linear stays as the checkpoint stores it. */
    @Override
    LinearMethod linearMethodOf(String module) {
        return unquantizedLinear();
    }

    private QuantMethod gptOssMxfp4() {
        return new GptOssMxfp4Method();
    }

    /**
     * Transformers' rule is a substring test ({@code key in name}); gpt-oss configs also write globs
     * ({@code model.layers.*.mlp.router}). A module is excluded when a glob matches it or a parent of it, or a plain
     * entry occurs in its name.
     */
    boolean excluded(String module) {
        for (String p : notConverted) {
            if (ModuleNames.isGlob(p)) {
                String name = module;
                while (true) {
                    if (ModuleNames.glob(p).matcher(name).matches()) {
                        return true;
                    }
                    int dot = name.lastIndexOf('.');
                    if (dot < 0) {
                        break;
                    }
                    name = name.substring(0, dot);
                }
            } else if (module.contains(p)) {
                return true;
            }
        }
        return false;
    }
}
