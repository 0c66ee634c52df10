package io.moe4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.safetensors.SafetensorsFile;
import io.moe4j.testing.RandomModels;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** {@code moe perplexity} as a user runs it: token ids of a conformance case, and a text through a real tokenizer. */
class PerplexityCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void idsOfACaseScoreAsTransformersLogitsDo() throws Exception {
        Path dir = LogitsCommandTest.fixture("m_qwen3_ct_nvfp4");
        int[] ids;
        float[] logits;
        try (SafetensorsFile io = SafetensorsFile.open(dir.resolve("io.safetensors"))) {
            ids = io.tensor("input_ids").toIntArray();
            logits = io.tensor("logits").toFloatArray();
        }
        double want = io.moe4j.generate.PerplexityTest.nll(logits, ids, 256) / (ids.length - 1);
        CliTest.Run r = CliTest.moe("perplexity", "--model", dir.toString(), "--input",
                dir.resolve("io.safetensors").toString(), "--backend", "cpu", "--threads", "2", "--json");
        assertThat(r.exit()).as(r.err()).isZero();
        JsonNode o = JSON.readTree(r.out());
        assertThat(o.get("tokens").asInt()).isEqualTo(ids.length);
        assertThat(o.get("scored").asInt()).isEqualTo(ids.length - 1);
        assertThat(o.get("window").asInt()).as("the window no longer than the ids").isEqualTo(ids.length);
        assertThat(o.get("mean_nll").asDouble()).isCloseTo(want, within(1e-5 * want));
        assertThat(o.get("perplexity").asDouble()).isCloseTo(Math.exp(want), within(1e-5 * Math.exp(want)));
        assertThat(o.has("bits_per_byte")).isFalse();
    }

    @Test
    void aTextIsScoredInWindowsWithItsBitsPerByte(@TempDir Path tmp) throws Exception {
        Path model = RandomModels.qwen3(tmp.resolve("qwen3"), 3);
        String text = "The quick brown fox jumps over the lazy dog. ".repeat(12) + "Ünïcödé ends it.";
        Path file = Files.writeString(tmp.resolve("text.txt"), text);
        CliTest.Run r = CliTest.moe("perplexity", "--model", model.toString(), "--file", file.toString(), "--backend",
                "cpu", "--threads", "2", "--window", "48", "--stride", "16", "--json");
        assertThat(r.exit()).as(r.err()).isZero();
        JsonNode o = JSON.readTree(r.out());
        int tokens = o.get("tokens").asInt();
        assertThat(tokens).isGreaterThan(48);
        assertThat(o.get("scored").asInt()).isEqualTo(tokens - 1);
        assertThat(o.get("windows").asInt()).isEqualTo(io.moe4j.generate.Perplexity.windows(tokens, 48, 16));
        long bytes = text.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        assertThat(o.get("bytes").asLong()).isEqualTo(bytes);
        double totalNats = o.get("mean_nll").asDouble() * o.get("scored").asInt();
        assertThat(o.get("bits_per_byte").asDouble()).isCloseTo(totalNats / Math.log(2) / bytes, within(1e-9));
        CliTest.Run plain = CliTest.moe("perplexity", "--model", model.toString(), "--file", file.toString(),
                "--backend", "cpu", "--threads", "2", "--window", "48", "--stride", "16");
        assertThat(plain.out()).startsWith("perplexity ").contains("bits a byte")
                .contains(String.format("mean NLL %.4f", o.get("mean_nll").asDouble()));
    }

    @Test
    void badArgumentsAreNamed(@TempDir Path tmp) {
        Path dir = LogitsCommandTest.fixture("m_qwen3_ct_nvfp4");
        String input = dir.resolve("io.safetensors").toString();
        CliTest.Run window = CliTest.moe("perplexity", "--model", dir.toString(), "--input", input, "--window", "1");
        assertThat(window.exit()).isNotZero();
        assertThat(window.err()).contains("--window");
        CliTest.Run stride = CliTest.moe("perplexity", "--model", dir.toString(), "--input", input, "--window", "8",
                "--stride", "9");
        assertThat(stride.exit()).isNotZero();
        assertThat(stride.err()).contains("--stride");
        Path missing = tmp.resolve("nothing.txt");
        CliTest.Run file = CliTest.moe("perplexity", "--model", dir.toString(), "--file", missing.toString());
        assertThat(file.exit()).isNotZero();
        assertThat(file.err()).contains(missing.toString());
        CliTest.Run both = CliTest.moe("perplexity", "--model", dir.toString(), "--input", input, "--file",
                missing.toString());
        assertThat(both.exit()).isNotZero();
        assertThat(both.err()).contains("mutually exclusive");
    }
}
