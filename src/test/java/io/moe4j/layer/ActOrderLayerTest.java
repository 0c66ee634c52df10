package io.moe4j.layer;

import io.moe4j.MoeException;
import io.moe4j.quant.ActOrderExperts;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.routing.Routing;
import io.moe4j.safetensors.SafetensorsWriter;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A Qwen3-MoE layer of GPTQ act-order experts in compressed-tensors layout whose gate, up and down projections each
 * carry their own {@code weight_g_idx}: emulation against a float64 reference computed here from the
 * dequantization formula, and cpu against emulation, within the conformance cases' emulation tolerance.
 */
class ActOrderLayerTest {
    /** The conformance cases' {@code emulation_rel_l2}. */
    private static final double TOLERANCE = 1e-4;
    private static final int EXPERTS = 8;
    private static final int TOP_K = 2;
    private static final int TOKENS = 5;

    @ParameterizedTest(name = "int{0} g{1} symmetric={2}")
    @CsvSource({"4, 32, true", "4, 128, false", "8, 32, false", "8, 128, true"})
    void eachProjectionKeepsItsOwnColumnOrder(int bits, int group, boolean symmetric, @TempDir Path dir)
            throws IOException {
        int hidden = 512;
        int inter = 256;
        ActOrderExperts ex = new ActOrderExperts(EXPERTS, hidden, inter, bits, group, symmetric, 11L * bits + group);
        Random rnd = new Random(group);
        float[] router = new float[EXPERTS * hidden];
        for (int i = 0; i < router.length; i++) {
            router[i] = (rnd.nextInt(256) - 128) / 1024f; // exact in bf16
        }
        writeLayer(dir, ex, router);
        float[] x = new float[TOKENS * hidden];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        double[] want = reference(ex, router, x);

        float[] emulation;
        try (MoeLayer layer = MoeLayer.load(dir, 0, options("emulation"))) {
            ExpertMatrix w13 = layer.weights().w13();
            assertThat(w13.groupParts()).as("gate and up keep their own maps").isEqualTo(2);
            assertThat(layer.weights().w2().groupParts()).isEqualTo(1);
            assertThat(layer.weights().scheme().name()).contains("act-order");
            MoeOutput out = layer.forward(x, TOKENS);
            assertThat(out.routing().ids()).containsExactly(referenceIds(router, x, hidden));
            emulation = out.output();
        }
        assertThat(relative(emulation, want)).as("emulation vs float64 reference").isLessThanOrEqualTo(TOLERANCE);
        // The cuda backend declines the layer (auto passes it over), here and on a GPU alike.
        assertThatThrownBy(() -> MoeLayer.load(dir, 0, options("cuda")))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("backend cuda cannot run")
                .hasMessageContaining("act-order gate_proj and up_proj with different weight_g_idx");

        try (MoeLayer layer = MoeLayer.load(dir, 0, options("cpu"))) {
            float[] cpu = layer.forward(x, TOKENS).output();
            assertThat(relL2(cpu, emulation)).as("cpu vs emulation").isLessThanOrEqualTo(TOLERANCE);
            // One token at a time (the decode path) gives the batch's rows.
            for (int t = 0; t < TOKENS; t++) {
                float[] one = layer.forward(Arrays.copyOfRange(x, t * hidden, (t + 1) * hidden), 1).output();
                assertThat(relL2(one, Arrays.copyOfRange(emulation, t * hidden, (t + 1) * hidden)))
                        .as("cpu token %d alone", t).isLessThanOrEqualTo(TOLERANCE);
            }
        }
    }

    /**
     * A DeepSeek-V3 layer whose shared expert (a stack of three linears) is act-order with its own map per
     * projection: the shared output on emulation against float64, and on cpu against emulation.
     */
    @ParameterizedTest(name = "shared expert int{0} g{1} symmetric={2}")
    @CsvSource({"4, 32, false", "8, 128, true"})
    void sharedExpertStacksGateAndUpWithTheirOwnMaps(int bits, int group, boolean symmetric, @TempDir Path dir)
            throws IOException {
        int hidden = 256;
        int inter = 128;
        ActOrderExperts routed = new ActOrderExperts(EXPERTS, hidden, inter, bits, group, symmetric, 5);
        ActOrderExperts shared = new ActOrderExperts(1, hidden, inter, bits, group, symmetric, 6);
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 1,
                 "hidden_size": %d, "vocab_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4,
                 "rms_norm_eps": 1e-06, "torch_dtype": "bfloat16", "hidden_act": "silu", "num_experts_per_tok": 2,
                 "moe_intermediate_size": %d, "intermediate_size": 384, "n_routed_experts": %d,
                 "n_shared_experts": 1, "n_group": 4, "topk_group": 2, "routed_scaling_factor": 2.5,
                 "norm_topk_prob": true, "first_k_dense_replace": 0, "moe_layer_freq": 1, "scoring_func": "sigmoid",
                 "topk_method": "noaux_tc", "q_lora_rank": 16, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
                 "qk_nope_head_dim": 8, "v_head_dim": 8, "quantization_config": %s}
                """.formatted(hidden, inter, EXPERTS, routed.quantizationConfig()));
        SafetensorsWriter w = new SafetensorsWriter();
        w.addBf16("model.layers.0.mlp.gate.weight", new long[]{EXPERTS, hidden}, new float[EXPERTS * hidden]);
        w.addF32("model.layers.0.mlp.gate.e_score_correction_bias", new long[]{EXPERTS}, new float[EXPERTS]);
        routed.write(w, "model.layers.0.mlp.experts.");
        shared.writeExpert(w, "model.layers.0.mlp.shared_experts", 0);
        w.write(dir.resolve("model.safetensors"));

        Random rnd = new Random(bits);
        float[] x = new float[TOKENS * hidden];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        double[] want = new double[TOKENS * hidden];
        for (int t = 0; t < TOKENS; t++) {
            System.arraycopy(shared.expert(0, x, t * hidden), 0, want, t * hidden, hidden);
        }
        float[] emulation = new float[x.length];
        try (MoeLayer layer = MoeLayer.load(dir, 0, options("emulation"))) {
            assertThat(layer.hasSharedExperts()).isTrue();
            layer.shared(x, TOKENS, emulation);
        }
        assertThat(relative(emulation, want)).as("emulation vs float64 reference").isLessThanOrEqualTo(TOLERANCE);
        float[] cpu = new float[x.length];
        try (MoeLayer layer = MoeLayer.load(dir, 0, options("cpu"))) {
            layer.shared(x, TOKENS, cpu);
        }
        assertThat(relL2(cpu, emulation)).as("cpu vs emulation").isLessThanOrEqualTo(TOLERANCE);
    }

    /** ‖got − want‖ / ‖want‖ against a float64 reference. */
    private static double relative(float[] got, double[] want) {
        assertThat(got).hasSize(want.length);
        double d = 0;
        double n = 0;
        for (int i = 0; i < want.length; i++) {
            d += (got[i] - want[i]) * (got[i] - want[i]);
            n += want[i] * want[i];
        }
        return Math.sqrt(d / n);
    }

    private static MoeLayerOptions options(String backend) {
        return MoeLayerOptions.defaults().withBackend(backend).withThreads(2);
    }

    private static void writeLayer(Path dir, ActOrderExperts ex, float[] router) throws IOException {
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 1,
                 "hidden_size": %d, "vocab_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
                 "head_dim": 16, "rms_norm_eps": 1e-06, "torch_dtype": "bfloat16", "hidden_act": "silu",
                 "num_experts_per_tok": %d, "moe_intermediate_size": %d, "intermediate_size": 384,
                 "num_experts": %d, "norm_topk_prob": true, "decoder_sparse_step": 1, "mlp_only_layers": [],
                 "quantization_config": %s}
                """.formatted(ex.hidden, TOP_K, ex.intermediate, EXPERTS, ex.quantizationConfig()));
        SafetensorsWriter w = new SafetensorsWriter();
        w.addBf16("model.layers.0.mlp.gate.weight", new long[]{EXPERTS, ex.hidden}, router);
        ex.write(w, "model.layers.0.mlp.experts.");
        w.write(dir.resolve("model.safetensors"));
    }

    /** Qwen3-MoE routing in double: softmax of the router logits, top-k, renormalized. */
    private static Routing referenceRouting(float[] router, float[] x, int hidden) {
        int[] ids = new int[TOKENS * TOP_K];
        float[] weights = new float[TOKENS * TOP_K];
        for (int t = 0; t < TOKENS; t++) {
            double[] logits = new double[EXPERTS];
            for (int e = 0; e < EXPERTS; e++) {
                for (int c = 0; c < hidden; c++) {
                    logits[e] += (double) router[e * hidden + c] * x[t * hidden + c];
                }
            }
            Integer[] order = new Integer[EXPERTS];
            for (int e = 0; e < EXPERTS; e++) {
                order[e] = e;
            }
            Arrays.sort(order, (a, b) -> Double.compare(logits[b], logits[a]));
            int[] chosen = {order[0], order[1]};
            Arrays.sort(chosen);
            // softmax then renormalizing over the top k is the softmax over the top k
            double max = Math.max(logits[chosen[0]], logits[chosen[1]]);
            double sum = 0;
            for (int e : chosen) {
                sum += Math.exp(logits[e] - max);
            }
            for (int j = 0; j < TOP_K; j++) {
                ids[t * TOP_K + j] = chosen[j];
                weights[t * TOP_K + j] = (float) (Math.exp(logits[chosen[j]] - max) / sum);
            }
        }
        return new Routing(TOKENS, TOP_K, ids, weights, false);
    }

    private static int[] referenceIds(float[] router, float[] x, int hidden) {
        return referenceRouting(router, x, hidden).ids();
    }

    private static double[] reference(ActOrderExperts ex, float[] router, float[] x) {
        int h = ex.hidden;
        Routing r = referenceRouting(router, x, h);
        double[] out = new double[TOKENS * h];
        for (int t = 0; t < TOKENS; t++) {
            for (int j = 0; j < TOP_K; j++) {
                double[] y = ex.expert(r.expert(t, j), x, t * h);
                double wgt = r.weight(t, j);
                for (int c = 0; c < h; c++) {
                    out[t * h + c] += wgt * y[c];
                }
            }
        }
        return out;
    }
}
