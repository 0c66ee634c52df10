package io.moe4j.model.linear;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.cpu.CpuBackend;
import io.moe4j.backend.emulation.EmulationBackend;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.format.ElementFormat;
import io.moe4j.format.Fp8Quant;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.layer.MoeLayer;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.WeightFormat;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.quant.method.HubFp8Method;
import io.moe4j.quant.method.SharedExpertLoader;
import io.moe4j.routing.Routing;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsWriter;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Experts in the schemes the dense linears brought: the hub's FP8 block experts (Qwen3-FP8 fixture) and a
 * quantized shared expert (the DeepSeek FP8-block fixture with its shared expert stored in FP8 blocks too, as a
 * checkpoint that does not exclude it has it).
 */
class QuantizedExpertsTest {

    @Test
    void hubFp8ExpertsLoadWithTheirBlockScalesAndGroupActivations() {
        Path dir = ModelCases.dir("m_qwen3_hf_fp8_block");
        ModelConfig config = ModelConfig.load(dir);
        MoeLayerConfig layer = config.layer(0);
        QuantMethod method = QuantizationConfig.of(config).methodFor(layer);
        assertThat(method).isInstanceOf(HubFp8Method.class);
        try (Checkpoint ckpt = Checkpoint.open(dir); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = method.load(ckpt, layer, null, arena);
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.FP8_BLOCK);
            assertThat(w.a13()).isEqualTo(new ActivationQuant.Fp8Group(128));
            int inter = layer.intermediate();
            float[] row = new float[layer.hidden()];
            for (int e : new int[]{0, 5}) {
                // Up row 3 of expert e sits after the gate rows in w13.
                MatrixDequantizer.row(w.w13(), e, inter + 3, row);
                String name = "model.layers.0.mlp.experts." + e + ".up_proj.";
                Tensor codes = ckpt.tensor(name + "weight");
                float s = ckpt.tensor(name + "weight_scale_inv").getFloat(0);
                for (int c = 0; c < row.length; c++) {
                    int code = codes.segment().get(ValueLayout.JAVA_BYTE, 3L * row.length + c) & 0xFF;
                    assertThat(row[c]).isEqualTo(ElementFormat.E4M3FN.decode(code) * s);
                }
            }
        }
        try (MoeLayer emu = MoeLayer.load(dir, 0, MoeLayerOptions.defaults().withBackend("emulation").withThreads(1));
             MoeLayer cpu = MoeLayer.load(dir, 0, MoeLayerOptions.defaults().withBackend("cpu").withThreads(2))) {
            float[] x = gaussian(6 * layer.hidden(), 3);
            assertThat(relL2(emu.forward(x, 6).output(), cpu.forward(x, 6).output())).isLessThan(1e-4);
        }
    }

    @Test
    void aQuantizedSharedExpertRunsInItsSchemeOnEveryBackend(@TempDir Path dir) throws IOException {
        writeDeepSeekWithFp8SharedExpert(dir);
        ModelConfig config = ModelConfig.load(dir);
        MoeLayerConfig layer = config.layer(1);
        int h = layer.hidden();
        int inter = layer.shared().intermediate();
        int tokens = 5;
        float[] x = gaussian(tokens * h, 11);
        try (Checkpoint ckpt = Checkpoint.open(dir); Arena arena = Arena.ofShared()) {
            ExpertWeights shared = SharedExpertLoader.load(ckpt, layer, QuantizationConfig.of(config)::linearMethod, arena);
            assertThat(shared.scheme().weights()).isEqualTo(WeightFormat.FP8_BLOCK);
            assertThat(shared.a13()).isEqualTo(new ActivationQuant.Fp8Group(128));
            assertThat(shared.a2()).isEqualTo(new ActivationQuant.Fp8Group(128));

            // float64 from the tensors: qdq(x) → gate, up → silu(gate)·up → qdq → down.
            double[][] g = fp8Block(ckpt, layer.shared().weight(Projection.GATE), inter, h);
            double[][] u = fp8Block(ckpt, layer.shared().weight(Projection.UP), inter, h);
            double[][] d = fp8Block(ckpt, layer.shared().weight(Projection.DOWN), h, inter);
            double[] expected = new double[tokens * h];
            for (int t = 0; t < tokens; t++) {
                float[] q = Arrays.copyOfRange(x, t * h, (t + 1) * h);
                Fp8Quant.qdqGroup(q, 0, h, 128);
                float[] act = new float[inter];
                for (int j = 0; j < inter; j++) {
                    double a = dot(g[j], q);
                    double b = dot(u[j], q);
                    act[j] = (float) (a / (1 + Math.exp(-a)) * b);
                }
                Fp8Quant.qdqGroup(act, 0, inter, 128);
                for (int r = 0; r < h; r++) {
                    expected[t * h + r] = dot(d[r], act);
                }
            }
            float[] ones = new float[tokens];
            Arrays.fill(ones, 1f);
            Routing all = new Routing(tokens, 1, new int[tokens], ones, false);
            for (var backend : new io.moe4j.backend.Backend[]{new EmulationBackend(), new CpuBackend()}) {
                try (Experts e = backend.prepare(shared, new ExecutionOptions(2))) {
                    float[] y = new float[tokens * h];
                    e.forward(x, tokens, all, y);
                    // The emulation is the float64 computation itself; the cpu sums GEMM1 in float32, which may move
                    // an activation across an FP8 rounding boundary before GEMM2.
                    double tolerance = backend instanceof EmulationBackend ? 1e-6 : 2e-3;
                    assertThat(relL2(expected, y)).as(backend.name()).isLessThan(tolerance);
                }
            }
        }
        try (MoeLayer emu = MoeLayer.load(dir, 1, MoeLayerOptions.defaults().withBackend("emulation").withThreads(1));
             MoeLayer cpu = MoeLayer.load(dir, 1, MoeLayerOptions.defaults().withBackend("cpu").withThreads(2))) {
            assertThat(relL2(emu.forward(x, tokens).output(), cpu.forward(x, tokens).output())).isLessThan(1e-4);
        }
    }

    /**
     * The DeepSeek FP8-block fixture with layer 1's shared expert quantized to E4M3 with a float32 scale per
     * 128 × 128 block (amax / 448), and "re:.*shared_expert.*" dropped from the config's ignore list.
     */
    private static void writeDeepSeekWithFp8SharedExpert(Path dir) throws IOException {
        Path src = ModelCases.dir("m_deepseek_ct_fp8_block");
        ObjectMapper json = new ObjectMapper();
        ObjectNode config = (ObjectNode) json.readTree(src.resolve("config.json").toFile());
        ArrayNode ignore = (ArrayNode) config.get("quantization_config").get("ignore");
        for (int i = ignore.size() - 1; i >= 0; i--) {
            if (ignore.get(i).asText().contains("shared_expert")) {
                ignore.remove(i);
            }
        }
        Files.writeString(dir.resolve("config.json"), json.writeValueAsString(config));
        try (Checkpoint ckpt = Checkpoint.open(src); Arena arena = Arena.ofConfined()) {
            SafetensorsWriter out = new SafetensorsWriter();
            for (String name : ckpt.names()) {
                Tensor t = ckpt.tensor(name);
                if (!name.contains("shared_experts.")) {
                    out.add(name, t.dtype(), t.shape(), t.segment());
                    continue;
                }
                int rows = (int) t.shape()[0];
                int cols = (int) t.shape()[1];
                String module = name.substring(0, name.length() - ".weight".length());
                int rb = Math.ceilDiv(rows, 128);
                int cb = Math.ceilDiv(cols, 128);
                float[] scales = new float[rb * cb];
                byte[] codes = new byte[rows * cols];
                for (int b = 0; b < rb; b++) {
                    for (int k = 0; k < cb; k++) {
                        float amax = 0;
                        for (int r = b * 128; r < Math.min(rows, b * 128 + 128); r++) {
                            for (int c = k * 128; c < Math.min(cols, k * 128 + 128); c++) {
                                amax = Math.max(amax, Math.abs(t.getFloat((long) r * cols + c)));
                            }
                        }
                        float s = amax / 448f;
                        scales[b * cb + k] = s;
                        for (int r = b * 128; r < Math.min(rows, b * 128 + 128); r++) {
                            for (int c = k * 128; c < Math.min(cols, k * 128 + 128); c++) {
                                codes[r * cols + c] = (byte) ElementFormat.E4M3FN.encode(t.getFloat((long) r * cols + c) / s);
                            }
                        }
                    }
                }
                out.add(module + ".weight", DType.F8_E4M3, new long[]{rows, cols}, codes);
                out.addF32(module + ".weight_scale", new long[]{rb, cb}, scales);
            }
            out.write(dir.resolve("model.safetensors"));
        }
    }

    private static double[][] fp8Block(Checkpoint ckpt, String weight, int rows, int cols) {
        Tensor codes = ckpt.tensor(weight);
        Tensor s = ckpt.tensor(weight.replace(".weight", ".weight_scale"));
        int cb = Math.ceilDiv(cols, 128);
        double[][] w = new double[rows][cols];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                int code = codes.segment().get(ValueLayout.JAVA_BYTE, (long) r * cols + c) & 0xFF;
                w[r][c] = ElementFormat.E4M3FN.decode(code) * (double) s.getFloat((long) (r / 128) * cb + c / 128);
            }
        }
        return w;
    }

    private static double dot(double[] w, float[] x) {
        double acc = 0;
        for (int c = 0; c < w.length; c++) {
            acc += w[c] * x[c];
        }
        return acc;
    }

    private static float[] gaussian(int n, long seed) {
        Random r = new Random(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) r.nextGaussian();
        }
        return x;
    }

    private static double relL2(double[] expected, float[] actual) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < expected.length; i++) {
            num += (actual[i] - expected[i]) * (actual[i] - expected[i]);
            den += expected[i] * expected[i];
        }
        return Math.sqrt(num / den);
    }

    private static double relL2(float[] expected, float[] actual) {
        double[] e = new double[expected.length];
        for (int i = 0; i < e.length; i++) {
            e[i] = expected[i];
        }
        return relL2(e, actual);
    }
}
