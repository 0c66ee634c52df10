package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.generate.GenerationRequest;
import io.moe4j.generate.MoeModel;
import io.moe4j.generate.SamplingParams;
import io.moe4j.model.ModelOptions;
import io.moe4j.testing.RandomModels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The server over a whole model on the GPU (skipped without one): a plain greedy reply (drawn on the device) is the
 * library's, and a reply that keeps log-probabilities or has a penalty (drawn on the host from the device's logits)
 * reports the log softmax of the logits a session of the same model gives. Plain HTTP: the GPU machine's class path
 * is kept small.
 */
@Timeout(300)
class DeviceServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    @TempDir
    static Path tmp;
    static MoeModel model;
    static OpenAiServer server;

    @BeforeAll
    static void start() {
        io.moe4j.backend.cuda.driver.CudaProbe probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
        org.junit.jupiter.api.Assumptions.assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
        model = MoeModel.load(RandomModels.qwen3(tmp.resolve("qwen3-random"), 5),
                ModelOptions.defaults().withBackend(ModelOptions.CUDA).withThreads(2));
        ServedModel served = new ServedModel("qwen3-random", new ModelSteps(model.model()), new ModelText(model));
        // kept sequences: the requests below share their prompt, so each continues the one before on the device
        server = new OpenAiServer(served, new SchedulerConfig(8, 32, 256, 2), ServerConfig.local(0)).start();
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        if (model != null) {
            model.close();
        }
    }

    private static JsonNode chat(String extra) throws Exception {
        String body = "{\"model\": \"qwen3-random\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello there\"}], "
                + "\"temperature\": 0, \"max_tokens\": 8" + extra + "}";
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                            + "/v1/chat/completions")).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            return JSON.readTree(r.body()).get("choices").get(0);
        }
    }

    private static int[] prompt() {
        var messages = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.arrayNode();
        messages.addObject().put("role", "user").put("content", "Hello there");
        return model.encodeChat(io.moe4j.text.chat.ChatRequest.of(messages, true));
    }

    @Test
    void greedyRepliesAndLogprobsOnTheDevice() throws Exception {
        String served = chat("").get("message").get("content").asText();
        String library;
        try (var session = model.model().newSession()) {
            library = new io.moe4j.generate.Generator(model.tokenizer()).generate(session, prompt(),
                    new GenerationRequest(8, SamplingParams.greedy(), List.of(), model.eosIds()), p -> { },
                    () -> false).text();
        }
        assertThat(served).isEqualTo(library);

        JsonNode c = chat(", \"logprobs\": true, \"top_logprobs\": 1");
        assertThat(c.get("message").get("content").asText()).isEqualTo(library);
        JsonNode tokens = c.get("logprobs").get("content");
        assertThat(tokens.size()).isPositive();
        try (var session = model.model().newSession()) {
            float[] logits = session.prefillLast(prompt());
            for (JsonNode t : tokens) {
                int id = io.moe4j.model.Logits.argmax(logits, 0, logits.length);
                assertThat(t.get("logprob").asDouble()).isCloseTo(io.moe4j.testing.LogSoftmax.of(logits)[id],
                        within(1e-3));
                logits = session.decode(id);
            }
        }
        // a penalty moves the draw to the host, from the device's logits
        assertThat(chat(", \"presence_penalty\": 2").get("message").get("content").asText()).isNotEmpty();
    }

    /**
     * Three greedy choices on the device (those after the first copy a sequence that read the prompt where one can
     * be copied) all answer as the library.
     */
    @Test
    void choicesCopyTheDeviceSequenceThatReadThePrompt() throws Exception {
        String library;
        try (var session = model.model().newSession()) {
            library = new io.moe4j.generate.Generator(model.tokenizer()).generate(session, prompt(),
                    new GenerationRequest(8, SamplingParams.greedy(), List.of(), model.eosIds()), p -> { },
                    () -> false).text();
        }
        String body = "{\"model\": \"qwen3-random\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello there\"}], "
                + "\"temperature\": 0, \"max_tokens\": 8, \"n\": 3}";
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                            + "/v1/chat/completions")).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode choices = JSON.readTree(r.body()).get("choices");
            assertThat(choices.size()).isEqualTo(3);
            for (JsonNode c : choices) {
                assertThat(c.get("message").get("content").asText()).isEqualTo(library);
            }
        }
    }

    /**
     * A scored prompt (echo with logprobs) longer than one scoring call and one step's prompt budget: every position's
     * logits come back from the device, and each prompt token's value is the log softmax of a device session's
     * prefill at the position before it.
     */
    @Test
    void aScoredPromptOnTheDevice() throws Exception {
        int vocab = model.model().vocabSize();
        int[] prompt = new java.util.Random(3).ints(300, 0, Math.min(vocab, 100_000)).toArray();
        var body = JSON.createObjectNode().put("model", "qwen3-random").put("echo", true).put("logprobs", 1)
                .put("max_tokens", 0);
        var ids = body.putArray("prompt");
        for (int t : prompt) {
            ids.add(t);
        }
        JsonNode values;
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                            + "/v1/completions")).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            values = JSON.readTree(r.body()).get("choices").get(0).get("logprobs").get("token_logprobs");
        }
        assertThat(values.size()).isEqualTo(prompt.length);
        try (var session = model.model().newSession()) {
            float[] all = session.prefill(prompt);
            for (int i = 0; i + 1 < prompt.length; i++) {
                double[] row = io.moe4j.testing.LogSoftmax.of(java.util.Arrays.copyOfRange(all, i * vocab,
                        (i + 1) * vocab));
                assertThat(values.get(i + 1).asDouble()).as("position %d", i + 1)
                        .isCloseTo(row[prompt[i + 1]], within(1e-3));
            }
        }
    }
}
