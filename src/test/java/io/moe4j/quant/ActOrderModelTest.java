package io.moe4j.quant;

import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.safetensors.SafetensorsWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A two-layer Qwen3-MoE whose feed-forwards are GPTQ act-order int4 with a map of their own per projection: layer 0
 * routed experts, layer 1 a dense MLP ({@code mlp_only_layers}). Its logits on emulation equal those of a twin
 * checkpoint holding the same weights dequantized to f32 (no quantization config), and cpu's follow emulation's.
 */
class ActOrderModelTest {
    private static final int VOCAB = 256;
    private static final int HIDDEN = 256;
    private static final int HEADS = 4;
    private static final int KV_HEADS = 2;
    private static final int HEAD_DIM = 32;
    private static final int EXPERTS = 8;
    private static final int MOE_INTER = 128;
    private static final int DENSE_INTER = 256;
    private static final int[] TOKENS = {1, 17, 42, 99, 3, 250, 128, 7};

    @Test
    void actOrderModelMatchesItsDequantizedTwin(@TempDir Path tmp) throws IOException {
        ActOrderExperts moe = new ActOrderExperts(EXPERTS, HIDDEN, MOE_INTER, 4, 32, false, 21);
        ActOrderExperts dense = new ActOrderExperts(1, HIDDEN, DENSE_INTER, 4, 32, false, 22);
        Path quantized = write(tmp.resolve("act-order"), moe, dense, true);
        Path twin = write(tmp.resolve("f32"), moe, dense, false);

        float[] want = logits(twin, "emulation");
        float[] emulation = logits(quantized, "emulation");
        assertThat(relL2(emulation, want)).as("act-order vs dequantized twin on emulation").isLessThanOrEqualTo(1e-5);
        float[] cpu = logits(quantized, "cpu");
        // the conformance models' emulation_rel_l2
        assertThat(relL2(cpu, emulation)).as("cpu vs emulation").isLessThanOrEqualTo(1e-3);
    }

    private static float[] logits(Path dir, String backend) {
        try (Model model = Model.load(dir, ModelOptions.defaults().withBackend(backend).withThreads(2));
             Session session = model.newSession()) {
            return session.prefill(TOKENS);
        }
    }

    /** The model: every tensor but the feed-forwards' from one seed, so both variants share them. */
    private static Path write(Path dir, ActOrderExperts moe, ActOrderExperts dense, boolean quantized)
            throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "vocab_size": %d,
                 "hidden_size": %d, "num_hidden_layers": 2, "num_attention_heads": %d, "num_key_value_heads": %d,
                 "head_dim": %d, "num_experts": %d, "num_experts_per_tok": 2, "moe_intermediate_size": %d,
                 "intermediate_size": %d, "decoder_sparse_step": 1, "mlp_only_layers": [1], "norm_topk_prob": true,
                 "hidden_act": "silu", "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "rope_scaling": null,
                 "max_position_embeddings": 4096, "attention_bias": false, "tie_word_embeddings": false,
                 "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"%s}
                """.formatted(VOCAB, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, EXPERTS, MOE_INTER, DENSE_INTER,
                quantized ? ", \"quantization_config\": " + moe.quantizationConfig() : ""));
        SplittableRandom random = new SplittableRandom(3);
        SafetensorsWriter w = new SafetensorsWriter();
        linear(w, random, "model.embed_tokens.weight", VOCAB, HIDDEN, 1.0);
        for (int l = 0; l < 2; l++) {
            String p = "model.layers." + l + ".";
            w.addBf16(p + "input_layernorm.weight", new long[]{HIDDEN}, ones(HIDDEN));
            w.addBf16(p + "post_attention_layernorm.weight", new long[]{HIDDEN}, ones(HIDDEN));
            linear(w, random, p + "self_attn.q_proj.weight", HEADS * HEAD_DIM, HIDDEN, 1 / Math.sqrt(HIDDEN));
            linear(w, random, p + "self_attn.k_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN, 1 / Math.sqrt(HIDDEN));
            linear(w, random, p + "self_attn.v_proj.weight", KV_HEADS * HEAD_DIM, HIDDEN, 1 / Math.sqrt(HIDDEN));
            linear(w, random, p + "self_attn.o_proj.weight", HIDDEN, HEADS * HEAD_DIM, 1 / Math.sqrt(HIDDEN));
            w.addBf16(p + "self_attn.q_norm.weight", new long[]{HEAD_DIM}, ones(HEAD_DIM));
            w.addBf16(p + "self_attn.k_norm.weight", new long[]{HEAD_DIM}, ones(HEAD_DIM));
        }
        linear(w, random, "model.layers.0.mlp.gate.weight", EXPERTS, HIDDEN, 1 / Math.sqrt(HIDDEN));
        for (int e = 0; e < EXPERTS; e++) {
            feedForward(w, moe, "model.layers.0.mlp.experts." + e, e, quantized);
        }
        feedForward(w, dense, "model.layers.1.mlp", 0, quantized);
        w.addBf16("model.norm.weight", new long[]{HIDDEN}, ones(HIDDEN));
        linear(w, random, "lm_head.weight", VOCAB, HIDDEN, 1 / Math.sqrt(HIDDEN));
        w.write(dir.resolve("model.safetensors"));
        return dir;
    }

    private static void feedForward(SafetensorsWriter w, ActOrderExperts ex, String module, int e, boolean quantized) {
        if (quantized) {
            ex.writeExpert(w, module, e);
        } else {
            ex.writeDequantized(w, module, e);
        }
    }

    private static void linear(SafetensorsWriter w, SplittableRandom random, String name, int rows, int cols,
                               double std) {
        float[] v = new float[rows * cols];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) ((random.nextDouble() * 2 - 1) * std * Math.sqrt(3));
        }
        w.addBf16(name, new long[]{rows, cols}, v);
    }

    private static float[] ones(int n) {
        float[] v = new float[n];
        java.util.Arrays.fill(v, 1f);
        return v;
    }
}
