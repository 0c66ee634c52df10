package io.moe4j.testing;

import io.moe4j.safetensors.SafetensorsWriter;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.zip.GZIPInputStream;

/**
 * Small models with random weights and a real tokenizer, written as a user's model directory would hold them
 * (config.json, model.safetensors, generation_config.json, tokenizer.json, tokenizer_config.json): for end-to-end
 * tests of generation, chat and the server, where only the plumbing and the constraints are under test.
 */
public final class RandomModels {
    /** Qwen3's vocabulary size as Qwen3-30B-A3B's config.json gives it (the tokenizer's ids end at 151668). */
    public static final int QWEN3_VOCAB = 151_936;

    private RandomModels() {
    }

    /** The fixture tokenizers of {@code ../shared/tokenizers}. */
    public static Path sharedTokenizers() {
        return Path.of(System.getProperty("moe4j.shared", "../shared")).resolve("tokenizers");
    }

    /**
     * A two-layer Qwen3-MoE (hidden 64, 4 heads of 16, 2 KV heads, 8 experts of 32, top-2, tied embeddings) in
     * bf16 with the real Qwen3 tokenizer and chat template, written into {@code dir}.
     */
    public static Path qwen3(Path dir, long seed) {
        int vocab = QWEN3_VOCAB;
        int hidden = 64;
        int heads = 4;
        int kvHeads = 2;
        int headDim = 16;
        int experts = 8;
        int intermediate = 32;
        int layers = 2;
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("config.json"), """
                    {
                      "architectures": ["Qwen3MoeForCausalLM"],
                      "model_type": "qwen3_moe",
                      "vocab_size": %d,
                      "hidden_size": %d,
                      "num_hidden_layers": %d,
                      "num_attention_heads": %d,
                      "num_key_value_heads": %d,
                      "head_dim": %d,
                      "num_experts": %d,
                      "num_experts_per_tok": 2,
                      "moe_intermediate_size": %d,
                      "intermediate_size": 128,
                      "decoder_sparse_step": 1,
                      "mlp_only_layers": [],
                      "norm_topk_prob": true,
                      "hidden_act": "silu",
                      "rms_norm_eps": 1e-06,
                      "rope_theta": 1000000.0,
                      "rope_scaling": null,
                      "max_position_embeddings": 4096,
                      "attention_bias": false,
                      "tie_word_embeddings": true,
                      "bos_token_id": 151643,
                      "eos_token_id": 151645,
                      "torch_dtype": "bfloat16"
                    }
                    """.formatted(vocab, hidden, layers, heads, kvHeads, headDim, experts, intermediate));
            Files.writeString(dir.resolve("generation_config.json"), """
                    {"bos_token_id": 151643, "eos_token_id": [151645, 151643], "do_sample": true,
                     "temperature": 0.6, "top_k": 20, "top_p": 0.95}
                    """);
            Path tokenizers = sharedTokenizers().resolve("qwen3");
            try (InputStream in = new GZIPInputStream(Files.newInputStream(tokenizers.resolve("tokenizer.json.gz")))) {
                Files.copy(in, dir.resolve("tokenizer.json"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            Files.copy(tokenizers.resolve("tokenizer_config.json"), dir.resolve("tokenizer_config.json"),
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);

            SplittableRandom random = new SplittableRandom(seed);
            SafetensorsWriter w = new SafetensorsWriter();
            w.addBf16("model.embed_tokens.weight", new long[]{vocab, hidden}, gaussian(random, vocab * hidden, 1.0));
            for (int l = 0; l < layers; l++) {
                String p = "model.layers." + l + ".";
                w.addBf16(p + "input_layernorm.weight", new long[]{hidden}, ones(hidden));
                w.addBf16(p + "post_attention_layernorm.weight", new long[]{hidden}, ones(hidden));
                linear(w, random, p + "self_attn.q_proj.weight", heads * headDim, hidden);
                linear(w, random, p + "self_attn.k_proj.weight", kvHeads * headDim, hidden);
                linear(w, random, p + "self_attn.v_proj.weight", kvHeads * headDim, hidden);
                linear(w, random, p + "self_attn.o_proj.weight", hidden, heads * headDim);
                w.addBf16(p + "self_attn.q_norm.weight", new long[]{headDim}, ones(headDim));
                w.addBf16(p + "self_attn.k_norm.weight", new long[]{headDim}, ones(headDim));
                linear(w, random, p + "mlp.gate.weight", experts, hidden);
                for (int e = 0; e < experts; e++) {
                    String x = p + "mlp.experts." + e + ".";
                    linear(w, random, x + "gate_proj.weight", intermediate, hidden);
                    linear(w, random, x + "up_proj.weight", intermediate, hidden);
                    linear(w, random, x + "down_proj.weight", hidden, intermediate);
                }
            }
            w.addBf16("model.norm.weight", new long[]{hidden}, ones(hidden));
            w.write(dir.resolve("model.safetensors"));
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** gpt-oss's vocabulary size as gpt-oss-20b's config.json gives it (the tokenizer's ids end at 200018). */
    public static final int GPT_OSS_VOCAB = 201_088;

    /**
     * A two-layer gpt-oss (hidden 64, 4 heads of 16 with sinks, 2 KV heads, a sliding and a full attention layer,
     * 4 experts of 64, top-2, MXFP4 experts as the checkpoints store them) with the real gpt-oss tokenizer and
     * chat_template.jinja, written into {@code dir}.
     */
    public static Path gptOss(Path dir, long seed) {
        int vocab = GPT_OSS_VOCAB;
        int hidden = 64;
        int heads = 4;
        int kvHeads = 2;
        int headDim = 16;
        int experts = 4;
        int intermediate = 64;
        int layers = 2;
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("config.json"), """
                    {
                      "architectures": ["GptOssForCausalLM"],
                      "model_type": "gpt_oss",
                      "vocab_size": %d,
                      "hidden_size": %d,
                      "num_hidden_layers": %d,
                      "num_attention_heads": %d,
                      "num_key_value_heads": %d,
                      "head_dim": %d,
                      "num_local_experts": %d,
                      "experts_per_token": 2,
                      "num_experts_per_tok": 2,
                      "intermediate_size": %d,
                      "sliding_window": 128,
                      "layer_types": ["sliding_attention", "full_attention"],
                      "rms_norm_eps": 1e-05,
                      "rope_theta": 150000,
                      "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                        "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false},
                      "max_position_embeddings": 4096,
                      "initial_context_length": 4096,
                      "attention_bias": true,
                      "swiglu_limit": 7.0,
                      "hidden_act": "silu",
                      "tie_word_embeddings": false,
                      "bos_token_id": 199998,
                      "eos_token_id": 200002,
                      "pad_token_id": 199999,
                      "torch_dtype": "bfloat16",
                      "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
                        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
                    }
                    """.formatted(vocab, hidden, layers, heads, kvHeads, headDim, experts, intermediate));
            Files.writeString(dir.resolve("generation_config.json"), """
                    {"bos_token_id": 199998, "eos_token_id": [200002, 199999, 200012], "pad_token_id": 199999,
                     "do_sample": true}
                    """);
            Path tokenizers = sharedTokenizers().resolve("gpt-oss");
            try (InputStream in = new GZIPInputStream(Files.newInputStream(tokenizers.resolve("tokenizer.json.gz")))) {
                Files.copy(in, dir.resolve("tokenizer.json"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            for (String f : new String[] {"tokenizer_config.json", "chat_template.jinja"}) {
                Files.copy(tokenizers.resolve(f), dir.resolve(f), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }

            SplittableRandom random = new SplittableRandom(seed);
            SafetensorsWriter w = new SafetensorsWriter();
            w.addBf16("model.embed_tokens.weight", new long[]{vocab, hidden}, gaussian(random, vocab * hidden, 1.0));
            linear(w, random, "lm_head.weight", vocab, hidden);
            int i2 = 2 * intermediate;
            for (int l = 0; l < layers; l++) {
                String p = "model.layers." + l + ".";
                w.addBf16(p + "input_layernorm.weight", new long[]{hidden}, ones(hidden));
                w.addBf16(p + "post_attention_layernorm.weight", new long[]{hidden}, ones(hidden));
                linear(w, random, p + "self_attn.q_proj.weight", heads * headDim, hidden);
                linear(w, random, p + "self_attn.k_proj.weight", kvHeads * headDim, hidden);
                linear(w, random, p + "self_attn.v_proj.weight", kvHeads * headDim, hidden);
                linear(w, random, p + "self_attn.o_proj.weight", hidden, heads * headDim);
                w.addBf16(p + "self_attn.q_proj.bias", new long[]{heads * headDim}, gaussian(random, heads * headDim, 0.1));
                w.addBf16(p + "self_attn.k_proj.bias", new long[]{kvHeads * headDim}, gaussian(random, kvHeads * headDim, 0.1));
                w.addBf16(p + "self_attn.v_proj.bias", new long[]{kvHeads * headDim}, gaussian(random, kvHeads * headDim, 0.1));
                w.addBf16(p + "self_attn.o_proj.bias", new long[]{hidden}, gaussian(random, hidden, 0.1));
                w.addBf16(p + "self_attn.sinks", new long[]{heads}, gaussian(random, heads, 1.0));
                linear(w, random, p + "mlp.router.weight", experts, hidden);
                w.addBf16(p + "mlp.router.bias", new long[]{experts}, gaussian(random, experts, 0.1));
                w.addBf16(p + "mlp.experts.gate_up_proj_bias", new long[]{experts, i2}, gaussian(random, experts * i2, 0.05));
                w.addBf16(p + "mlp.experts.down_proj_bias", new long[]{experts, hidden}, gaussian(random, experts * hidden, 0.05));
                // MXFP4: two E2M1 codes a byte, one E8M0 scale per 32; scales near 2^-3 keep activations O(1).
                w.add(p + "mlp.experts.gate_up_proj_blocks", io.moe4j.safetensors.DType.U8,
                        new long[]{experts, i2, hidden / 32, 16}, randomBytes(random, experts * i2 * hidden / 2));
                w.add(p + "mlp.experts.gate_up_proj_scales", io.moe4j.safetensors.DType.U8,
                        new long[]{experts, i2, hidden / 32}, scales(random, experts * i2 * hidden / 32, 127 - 3));
                w.add(p + "mlp.experts.down_proj_blocks", io.moe4j.safetensors.DType.U8,
                        new long[]{experts, hidden, intermediate / 32, 16}, randomBytes(random, experts * hidden * intermediate / 2));
                w.add(p + "mlp.experts.down_proj_scales", io.moe4j.safetensors.DType.U8,
                        new long[]{experts, hidden, intermediate / 32}, scales(random, experts * hidden * intermediate / 32, 127 - 4));
            }
            w.addBf16("model.norm.weight", new long[]{hidden}, ones(hidden));
            w.write(dir.resolve("model.safetensors"));
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static byte[] randomBytes(SplittableRandom random, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) random.nextInt(256);
        }
        return b;
    }

    private static byte[] scales(SplittableRandom random, int n, int center) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (center - 1 + random.nextInt(3));
        }
        return b;
    }

    private static void linear(SafetensorsWriter w, SplittableRandom random, String name, int rows, int cols) {
        w.addBf16(name, new long[]{rows, cols}, gaussian(random, rows * cols, 1.0 / Math.sqrt(cols)));
    }

    private static float[] gaussian(SplittableRandom random, int n, double std) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            // Box-Muller; a random model only needs a spread, not a particular distribution.
            double u = 1.0 - random.nextDouble();
            double g = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random.nextDouble());
            v[i] = (float) (g * std);
        }
        return v;
    }

    private static float[] ones(int n) {
        float[] v = new float[n];
        java.util.Arrays.fill(v, 1f);
        return v;
    }
}
