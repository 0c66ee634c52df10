package io.moe4j.quant;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.method.SharedExpertLoader;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.Map;

import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every conformance case: the method its config selects, the scheme, and an end-to-end check of the loaded
 * ExpertWeights: a plain float64 forward over the dequantized rows (router choice taken from io.safetensors) must
 * reproduce the case's expected output within its emulation tolerance. That catches any loading mistake that a
 * row-by-row decode would share with the loader (gate/up order, interleaving, transposition, activation scheme).
 */
class ConformanceCasesTest {
    /** case → scheme name. A new case without an entry still has to load and reproduce its output. */
    static final Map<String, String> SCHEMES = Map.ofEntries(
            entry("deepseek_bf16_grouped", "bf16"),
            entry("deepseek_ct_fp8_block", "compressed-tensors W8A8 FP8 (128x128 block weights, dynamic group-128 activations)"),
            entry("gptoss_bf16", "bf16"),
            entry("gptoss_mxfp4", "gpt-oss mxfp4"),
            entry("llama4_bf16_top1", "bf16"),
            entry("mixtral_bf16", "bf16"),
            entry("mixtral_ct_nvfp4a16", "compressed-tensors W4A16 NVFP4"),
            entry("mixtral_ct_w8a16_channel", "compressed-tensors W8A16 channel"),
            entry("mixtral_quark_w_mxfp6_e3m2_a_mxfp6_e3m2", "quark w_mxfp6_e3m2_a_mxfp6_e3m2"),
            entry("qwen3_bf16_nonorm", "bf16"),
            entry("qwen3_bf16_norm", "bf16"),
            entry("qwen3_ct_fp8_channel", "compressed-tensors W8A8 FP8 (per-channel weights, dynamic per-token activations)"),
            entry("qwen3_ct_fp8_tensor", "compressed-tensors W8A8 FP8 (per-tensor weights, static per-tensor activations)"),
            entry("qwen3_ct_nvfp4", "compressed-tensors W4A4 NVFP4"),
            entry("qwen3_ct_w4a16_g128", "compressed-tensors W4A16 g128"),
            entry("qwen3_ct_w4a8_g32", "compressed-tensors W4A8 int g32"),
            entry("qwen3_quark_int8_per_channel", "quark w_int8_per_channel_a_int8_per_tensor_static"),
            entry("qwen3_quark_w_mxfp4", "quark w_mxfp4"),
            entry("qwen3_quark_w_mxfp4_a_fp8", "quark w_mxfp4_a_fp8"),
            entry("qwen3_quark_w_mxfp4_a_mxfp4", "quark w_mxfp4_a_mxfp4"),
            entry("qwen3_quark_w_mxfp6_e2m3_a_mxfp6_e2m3", "quark w_mxfp6_e2m3_a_mxfp6_e2m3"));

    static List<String> cases() {
        return Cases.all();
    }

    @ParameterizedTest
    @MethodSource("cases")
    void caseLoadsWithItsSchemeAndReproducesItsOutput(String name) throws Exception {
        JsonNode caseJson = QuantizationConfigTest.JSON.readTree(Cases.dir(name).resolve("case.json").toFile());
        try (var c = Cases.open(name); Arena arena = Arena.ofConfined();
             Checkpoint io = Checkpoint.open(Cases.dir(name).resolve("io.safetensors"))) {
            QuantMethod method = c.method();
            ExpertWeights w = c.load(arena);
            if (SCHEMES.containsKey(name)) {
                assertThat(method.scheme().name()).isEqualTo(SCHEMES.get(name));
                assertThat(w.scheme().name()).isEqualTo(SCHEMES.get(name));
            }
            assertThat(w.numExperts()).isEqualTo(caseJson.get("num_experts").asInt());
            assertThat(w.hidden()).isEqualTo(caseJson.get("hidden_size").asInt());
            assertThat(w.intermediate()).isEqualTo(caseJson.get("intermediate_size").asInt());
            for (ExpectedTensor t : method.expectedTensors(c.layer())) {
                assertThat(c.checkpoint().contains(t.name())).as("expected tensor %s", t).isTrue();
            }
            ExpertWeights shared = c.layer().shared() == null ? null : SharedExpertLoader.load(c.checkpoint(), c.layer(), arena);

            Tensor x = io.tensor("hidden_states");
            Tensor expected = io.tensor("expected");
            Tensor ids = io.tensor("topk_ids");
            Tensor weights = io.tensor("topk_weights");
            int tokens = (int) x.shape()[0];
            int h = w.hidden();
            int k = (int) ids.shape()[1];
            int[] id = ids.toIntArray();
            Reference ref = new Reference(w);
            Reference sharedRef = shared == null ? null : new Reference(shared);
            double err = 0;
            double norm = 0;
            for (int t = 0; t < tokens; t++) {
                float[] in = new float[h];
                for (int j = 0; j < h; j++) {
                    in[j] = x.getFloat((long) t * h + j);
                }
                double[] y = new double[h];
                for (int s = 0; s < k; s++) {
                    int e = id[t * k + s];
                    float gate = weights.getFloat((long) t * k + s);
                    double[] out;
                    if (c.layer().router().weightOnInput()) {
                        float[] scaled = in.clone();
                        for (int j = 0; j < h; j++) {
                            scaled[j] = (float) ((double) scaled[j] * gate);
                        }
                        out = ref.expert(w.localExpert(e), scaled);
                        gate = 1f;
                    } else {
                        out = ref.expert(w.localExpert(e), in);
                    }
                    for (int j = 0; j < h; j++) {
                        y[j] += gate * out[j];
                    }
                }
                if (sharedRef != null) {
                    double[] out = sharedRef.expert(0, in);
                    for (int j = 0; j < h; j++) {
                        y[j] += out[j];
                    }
                }
                for (int j = 0; j < h; j++) {
                    double want = expected.getFloat((long) t * h + j);
                    err += (y[j] - want) * (y[j] - want);
                    norm += want * want;
                }
            }
            double rel = Math.sqrt(err / norm);
            double tol = caseJson.path("tolerance").path("emulation_rel_l2").asDouble(1e-4);
            assertThat(rel).as("%s relative L2 error", name).isLessThanOrEqualTo(tol);
        }
    }

    /** One expert's MLP in float64 over dequantized rows, with the scheme's activation quantize-dequantize. */
    static final class Reference {
        final ExpertWeights w;
        final float[][][] w13;
        final float[][][] w2;

        Reference(ExpertWeights w) {
            this.w = w;
            this.w13 = new float[w.numExperts()][][];
            this.w2 = new float[w.numExperts()][][];
        }

        private float[][] rows(float[][][] cache, ExpertMatrix m, int e) {
            if (cache[e] == null) {
                cache[e] = new float[m.rows()][];
                for (int r = 0; r < m.rows(); r++) {
                    cache[e][r] = Dequant.row(m, e, r);
                }
            }
            return cache[e];
        }

        double[] expert(int e, float[] input) {
            int h = w.hidden();
            int inter = w.intermediate();
            float[] x = input.clone();
            w.a13().qdqInPlace(x, 0, h, e);
            float[][] a = rows(w13, w.w13(), e);
            double[] g1 = new double[a.length];
            for (int r = 0; r < a.length; r++) {
                double s = w.w13Bias() == null ? 0 : w.w13Bias()[e * a.length + r];
                for (int j = 0; j < h; j++) {
                    s += (double) a[r][j] * x[j];
                }
                g1[r] = s;
            }
            float[] act = new float[inter];
            for (int j = 0; j < inter; j++) {
                double g = w.gateLayout() == GateLayout.INTERLEAVED ? g1[2 * j] : g1[j];
                double u = w.gateLayout() == GateLayout.INTERLEAVED ? g1[2 * j + 1] : g1[inter + j];
                act[j] = (float) w.activation().gated(g, u, w.swigluLimit());
            }
            w.a2().qdqInPlace(act, 0, inter, e);
            float[][] b = rows(w2, w.w2(), e);
            double[] out = new double[h];
            for (int r = 0; r < h; r++) {
                double s = w.w2Bias() == null ? 0 : w.w2Bias()[e * h + r];
                for (int j = 0; j < inter; j++) {
                    s += (double) b[r][j] * act[j];
                }
                out[r] = s;
            }
            return out;
        }
    }
}
