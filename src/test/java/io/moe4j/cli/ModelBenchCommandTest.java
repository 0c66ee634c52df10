package io.moe4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.bench.model.ModelBench;
import io.moe4j.bench.model.ModelPreset;
import io.moe4j.bench.model.ModelShape;
import io.moe4j.bench.model.TokenBytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code moe bench --model-preset}: its JSON line and its errors. */
class ModelBenchCommandTest {

    @Test
    void oneJsonLineWithTheDocumentedKeys(@TempDir Path tmp) throws Exception {
        // gpt-oss's layout and scheme at a test's size: 2 of 24 layers, 8 of 32 experts, hidden 64, vocab 300
        ModelShape tiny = new ModelShape(ModelShape.Family.GPT_OSS, 64, 2, 24, 4, 2, 16, 8, 32, 4, 64, 0, 300, 8, 0,
                0, null);
        ModelBenchRun run = new ModelBenchRun(ModelPreset.GPT_OSS_20B, tiny, "cpu", 2, new ModelBench(1, 3, 5, 1),
                tmp, 1L << 30, 8L << 20, true);
        String out = capture(() -> assertThat(run.run()).isZero());
        String[] lines = out.strip().split("\n");
        assertThat(lines).hasSize(1);
        JsonNode j = new ObjectMapper().readTree(lines[0]);
        List<String> keys = new ArrayList<>();
        j.fieldNames().forEachRemaining(keys::add);
        assertThat(keys).containsExactly("model_preset", "scheme", "backend", "threads", "layers", "model_layers",
                "experts", "model_experts", "decode_tokens", "decode_ms_per_token", "decode_tokens_per_s",
                "prompt_tokens", "prefill_tokens_per_s", "prefill_first_pass_tokens_per_s", "bytes_per_token", "bytes",
                "effective_gbps", "machine_gbps",
                "ratio", "full_model_bytes_per_token", "projected_full_model_tokens_per_s", "decode_cpu_share",
                "batches");
        assertThat(j.get("batches")).isEmpty();
        assertThat(j.get("model_preset").asText()).isEqualTo("gpt-oss-20b");
        assertThat(j.get("layers").asInt()).isEqualTo(2);
        assertThat(j.get("model_layers").asInt()).isEqualTo(24);
        assertThat(j.get("experts").asInt()).isEqualTo(8);
        assertThat(j.get("model_experts").asInt()).isEqualTo(32);
        assertThat(j.get("decode_tokens").asInt()).isEqualTo(3);
        assertThat(j.get("prompt_tokens").asInt()).isEqualTo(5);
        TokenBytes expected = TokenBytes.of(tiny);
        assertThat(j.get("bytes_per_token").asLong()).isEqualTo(expected.total());
        JsonNode parts = j.get("bytes");
        assertThat(parts.get("experts").asLong()).isEqualTo(expected.experts());
        assertThat(parts.get("lm_head").asLong()).isEqualTo(expected.lmHead());
        assertThat(parts.get("embedding_row").asLong() + parts.get("attention").asLong()
                + parts.get("experts").asLong() + parts.get("dense").asLong() + parts.get("norms").asLong()
                + parts.get("lm_head").asLong()).isEqualTo(expected.total());
        assertThat(j.get("full_model_bytes_per_token").asLong()).isEqualTo(TokenBytes.of(tiny.full()).total());
        double ms = j.get("decode_ms_per_token").asDouble();
        assertThat(ms).isPositive();
        // effective bandwidth is the bytes a token reads over the median step; the JSON rounds both to 3 decimals,
        // and a tiny model's step of a fraction of a millisecond loses up to 0.0005 / ms of its value to that
        double gbps = j.get("effective_gbps").asDouble();
        assertThat(gbps).isCloseTo(expected.total() / (ms * 1e-3) / 1e9,
                org.assertj.core.data.Offset.offset(2e-3 + gbps * (1e-3 + 0.0006 / ms)));
        assertThat(j.get("machine_gbps").asDouble()).isPositive();
        assertThat(j.get("prefill_tokens_per_s").asDouble()).isPositive();
        assertThat(j.get("prefill_first_pass_tokens_per_s").asDouble()).isPositive();
        assertThat(j.get("ratio").asDouble()).isCloseTo(j.get("effective_gbps").asDouble()
                / j.get("machine_gbps").asDouble(), org.assertj.core.data.Offset.offset(1e-3));
    }

    /** --batches: each batch size's steps, their median step and tokens/s over the batch, in the JSON and the text. */
    @Test
    void batchedDecodeIsTimedForEachBatchSize(@TempDir Path tmp) throws Exception {
        ModelShape tiny = new ModelShape(ModelShape.Family.GPT_OSS, 64, 2, 24, 4, 2, 16, 8, 32, 4, 64, 0, 300, 8, 0,
                0, null);
        ModelBench bench = new ModelBench(1, 3, 5, 1, List.of(2, 5));
        ModelBenchRun json = new ModelBenchRun(ModelPreset.GPT_OSS_20B, tiny, "cpu", 2, bench, tmp, 1L << 30,
                8L << 20, true);
        JsonNode j = new ObjectMapper().readTree(capture(() -> assertThat(json.run()).isZero()).strip());
        JsonNode batches = j.get("batches");
        assertThat(batches).hasSize(2);
        for (int i = 0; i < 2; i++) {
            JsonNode b = batches.get(i);
            int size = List.of(2, 5).get(i);
            assertThat(b.get("batch").asInt()).isEqualTo(size);
            assertThat(b.get("steps").asInt()).isEqualTo(3);
            double ms = b.get("ms_per_step").asDouble();
            assertThat(ms).isPositive();
            assertThat(b.get("tokens_per_s").asDouble()).isCloseTo(size * 1e3 / ms,
                    org.assertj.core.data.Percentage.withPercentage(1));
        }
        ModelBenchRun text = new ModelBenchRun(ModelPreset.GPT_OSS_20B, tiny, "cpu", 2, bench, tmp, 1L << 30,
                8L << 20, false);
        assertThat(capture(() -> assertThat(text.run()).isZero())).contains("decode batch 2 (median of 3 steps)",
                "decode batch 5 (median of 3 steps)");
        assertThat(bench.steps()).isEqualTo((1 + 3) * 3 + 2);
    }

    @Test
    void optionsThatDoNotApplyAreUserErrors() {
        assertThat(MoeCommand.execute("bench", "--model-preset", "gpt-5")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--model-preset", "gpt-oss-20b", "--tokens", "2")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--model-preset", "gpt-oss-20b", "--scheme", "nvfp4")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--model-preset", "gpt-oss-20b", "--backend", "npu")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--model-preset", "gpt-oss-20b", "--layers", "25")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--model-preset", "gpt-oss-20b", "--experts", "2")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--model-preset", "gpt-oss-20b", "--batches", "8,0")).isEqualTo(1);
        assertThat(MoeCommand.execute("bench", "--batches", "8")).isEqualTo(1); // a layer bench has no batches
    }

    /** Without a GPU, --backend cuda is refused with the probe's reason before any weights are written. */
    @Test
    void cudaWithoutADeviceIsRefusedBeforeWriting(@org.junit.jupiter.api.io.TempDir java.nio.file.Path cache) {
        io.moe4j.backend.cuda.driver.CudaProbe probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
        org.junit.jupiter.api.Assumptions.assumeFalse(probe.available(), "a CUDA device is here");
        CliTest.Run r = CliTest.moe("bench", "--model-preset", "gpt-oss-20b", "--backend", "cuda", "--cache-dir",
                cache.toString());
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).contains("--backend cuda: no usable CUDA device here (" + probe.reason() + ")");
        assertThat(cache.toFile().list()).isEmpty();
    }

    /** --activations int8 where the preset's experts quantize activations, or the backend cannot: refused unwritten. */
    @Test
    void int8ActivationsThatCannotRunAreRefusedBeforeWriting(@TempDir Path cache) {
        CliTest.Run fp8 = CliTest.moe("bench", "--model-preset", "qwen3-30b-a3b", "--activations", "int8",
                "--cache-dir", cache.toString());
        assertThat(fp8.exit()).isEqualTo(1);
        assertThat(fp8.err()).contains("qwen3-30b-a3b's experts quantize them");
        CliTest.Run emulation = CliTest.moe("bench", "--model-preset", "gpt-oss-20b", "--activations", "int8",
                "--backend", "emulation", "--cache-dir", cache.toString());
        assertThat(emulation.exit()).isEqualTo(1);
        assertThat(emulation.err()).contains("backend emulation multiplies activations in float only");
        assertThat(cache.toFile().list()).isEmpty();
    }

    /** A DeepSeek-V3 cut to its dense first layers says that no expert is timed, and how many layers would. */
    @Test
    void aRunOfOnlyDenseLayersSaysSo() {
        ModelShape full = ModelPreset.DEEPSEEK_V3.shape();
        assertThat(ModelBenchRun.denseOnly(ModelPreset.DEEPSEEK_V3, full.withLayers(3).withExperts(8)))
                .hasValueSatisfying(w -> assertThat(w).contains("first 3 layers are dense").contains("--layers 4"));
        assertThat(ModelBenchRun.denseOnly(ModelPreset.DEEPSEEK_V3, full.withLayers(4).withExperts(8))).isEmpty();
        assertThat(ModelBenchRun.denseOnly(ModelPreset.GPT_OSS_20B, ModelPreset.GPT_OSS_20B.shape().withLayers(1)))
                .isEmpty();
    }

    private static String capture(Runnable r) {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            r.run();
        } finally {
            System.setOut(old);
        }
        return buf.toString(StandardCharsets.UTF_8);
    }
}
