package io.moe4j.bench.model;

import io.moe4j.MoeException;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The hub models the whole-model bench imitates: each one's sizes as its config.json on the hub gives them, and the
 * weight scheme of a checkpoint users run.
 */
public enum ModelPreset {
    /** openai/gpt-oss-20b: MXFP4 experts; bf16 attention, router, embeddings and lm_head, as the hub ships it. */
    GPT_OSS_20B("gpt-oss-20b", "mxfp4 experts, bf16 attention/router/embeddings/lm_head (openai/gpt-oss-20b)",
            new ModelShape(ModelShape.Family.GPT_OSS, 2880, 24, 24, 64, 8, 64, 32, 32, 4, 2880, 0, 201_088, 128,
                    0, 0, null)),
    /** Qwen/Qwen3-30B-A3B-FP8: the hub's FP8 128×128 block format for every linear but the router and lm_head. */
    QWEN3_30B_A3B("qwen3-30b-a3b", "fp8 128x128 blocks, dynamic activations; bf16 router/embeddings/lm_head "
            + "(Qwen/Qwen3-30B-A3B-FP8)",
            new ModelShape(ModelShape.Family.QWEN3_MOE, 2048, 48, 48, 32, 4, 128, 128, 128, 8, 768, 0, 151_936, 0,
                    0, 0, null)),
    /**
     * Qwen/Qwen3-235B-A22B-FP8: the same format at the size that outgrows one GPU (the expert-parallel bench's model).
     */
    QWEN3_235B_A22B("qwen3-235b-a22b", "fp8 128x128 blocks, dynamic activations; bf16 router/embeddings/lm_head "
            + "(Qwen/Qwen3-235B-A22B-FP8)",
            new ModelShape(ModelShape.Family.QWEN3_MOE, 4096, 94, 94, 64, 4, 128, 128, 128, 8, 1536, 0, 151_936, 0,
                    0, 0, null)),
    /**
     * mistralai/Mixtral-8x7B-Instruct-v0.1 as llm-compressor quantizes it to FP8: compressed-tensors per-tensor E4M3
     * weights with static input scales, router and lm_head unquantized.
     */
    MIXTRAL_8X7B("mixtral-8x7b", "compressed-tensors fp8 per-tensor weights, static input scales; bf16 router/"
            + "embeddings/lm_head",
            new ModelShape(ModelShape.Family.MIXTRAL, 4096, 32, 32, 32, 8, 128, 8, 8, 2, 14_336, 0, 32_000, 0,
                    0, 0, null)),
    /** deepseek-ai/DeepSeek-V3: the hub's FP8 128×128 block format, latent attention, 3 dense layers first. */
    DEEPSEEK_V3("deepseek-v3", "fp8 128x128 blocks, dynamic activations; bf16 router/embeddings/lm_head "
            + "(deepseek-ai/DeepSeek-V3)",
            new ModelShape(ModelShape.Family.DEEPSEEK_V3, 7168, 61, 61, 128, 128, 0, 256, 256, 8, 2048, 18_432,
                    129_280, 0, 3, 1, new ModelShape.Mla(1536, 512, 128, 64, 128)));

    private final String cliName;
    private final String scheme;
    private final ModelShape shape;

    ModelPreset(String cliName, String scheme, ModelShape shape) {
        this.cliName = cliName;
        this.scheme = scheme;
        this.shape = shape;
    }

    public String cliName() {
        return cliName;
    }

    /** The weight scheme the bench writes, in words. */
    public String scheme() {
        return scheme;
    }

    /**
     * Whether the experts keep their activations in float (gpt-oss's MXFP4 with bf16 activations), the schemes
     * {@code --activations int8} is for; the FP8 presets quantize them.
     */
    public boolean expertsKeepActivationsInFloat() {
        return this == GPT_OSS_20B;
    }

    /** The whole model's shape. */
    public ModelShape shape() {
        return shape;
    }

    public static ModelPreset fromCliName(String name) {
        for (ModelPreset p : values()) {
            if (p.cliName.equals(name)) {
                return p;
            }
        }
        throw new MoeException("unknown model preset '" + name + "'; choose one of "
                + Arrays.stream(values()).map(ModelPreset::cliName).collect(Collectors.joining(", ")));
    }
}
