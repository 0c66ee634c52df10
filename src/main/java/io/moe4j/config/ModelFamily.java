package io.moe4j.config;

import io.moe4j.MoeException;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The model families whose MoE layers moe4j runs, by their Hugging Face {@code model_type}. */
public enum ModelFamily {
    MIXTRAL("mixtral"),
    QWEN3_MOE("qwen3_moe"),
    DEEPSEEK_V3("deepseek_v3"),
    GPT_OSS("gpt_oss"),
    LLAMA4_TEXT("llama4_text");

    private final String modelType;

    ModelFamily(String modelType) {
        this.modelType = modelType;
    }

    public String modelType() {
        return modelType;
    }

    public static ModelFamily of(String modelType, String where) {
        if (modelType == null || modelType.isEmpty()) {
            throw new MoeException(where + ": no model_type (supported: "
                    + Arrays.stream(values()).map(ModelFamily::modelType).collect(Collectors.joining(", ")) + ")");
        }
        String t = modelType == null ? "" : modelType.toLowerCase(Locale.ROOT);
        if (t.equals("llama4")) {
            return LLAMA4_TEXT;
        }
        for (ModelFamily f : values()) {
            if (f.modelType.equals(t)) {
                return f;
            }
        }
        throw new MoeException(where + ": unsupported model_type '" + modelType + "' (supported: "
                + Arrays.stream(values()).map(ModelFamily::modelType).collect(Collectors.joining(", ")) + ")");
    }
}
