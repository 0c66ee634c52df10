package io.moe4j.serve;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import io.moe4j.generate.GenerationRequest;
import io.moe4j.generate.GenerationResult;
import io.moe4j.generate.MoeModel;
import io.moe4j.generate.SamplingParams;
import io.moe4j.model.ModelOptions;
import io.moe4j.testing.RandomModels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The server over a real decoder: a random two-layer Qwen3-MoE with the real Qwen3 tokenizer and chat template,
 * driven by the official OpenAI Java SDK. Greedy answers, alone or batched with others, are what the library makes.
 */
@Timeout(180)
class RealModelServerTest {
    @TempDir
    static Path tmp;
    static MoeModel model;
    static OpenAiServer server;
    static OpenAIClient client;

    @BeforeAll
    static void start() {
        Path dir = RandomModels.qwen3(tmp.resolve("qwen3-random"), 5);
        model = MoeModel.load(dir, ModelOptions.defaults().withThreads(2));
        ServedModel served = new ServedModel("qwen3-random", new ModelSteps(model.model()), new ModelText(model));
        // two finished sequences kept: every chat shares the template's start, so most requests here take one
        server = new OpenAiServer(served, new SchedulerConfig(8, 32, 256, 2), ServerConfig.local(0)).start();
        client = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port() + "/v1").apiKey("unused")
                .maxRetries(0).timeout(Duration.ofSeconds(60)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
        model.close();
    }

    private static ChatCompletionCreateParams request(String user, int maxTokens) {
        return ChatCompletionCreateParams.builder().model("qwen3-random").addUserMessage(user).temperature(0.0)
                .maxCompletionTokens(maxTokens).build();
    }

    /** What the library generates for the same chat, greedily, in a session of its own. */
    private static String library(String user, int maxTokens) {
        return library(maxTokens, "user", user);
    }

    /** The library's greedy answer to the messages given as role, content, role, content ... */
    private static String library(int maxTokens, String... rolesAndContents) {
        var messages = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.arrayNode();
        for (int i = 0; i < rolesAndContents.length; i += 2) {
            messages.addObject().put("role", rolesAndContents[i]).put("content", rolesAndContents[i + 1]);
        }
        int[] prompt = model.encodeChat(io.moe4j.text.chat.ChatRequest.of(messages, true));
        try (var session = model.model().newSession()) {
            GenerationResult r = new io.moe4j.generate.Generator(model.tokenizer()).generate(session, prompt,
                    new GenerationRequest(maxTokens, SamplingParams.greedy(), List.of(), model.eosIds()), p -> { },
                    () -> false);
            return r.text();
        }
    }

    @Test
    void aChatCompletionIsTheLibrarysAnswer() {
        ChatCompletion c = client.chat().completions().create(request("Hello there", 8));
        assertThat(c.choices().getFirst().message().content().orElseThrow()).isEqualTo(library("Hello there", 8));
        assertThat(c.usage().orElseThrow().promptTokens()).isGreaterThan(5);
    }

    @Test
    void aStreamedCompletionReassemblesToTheSameText() {
        StringBuilder text = new StringBuilder();
        try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions()
                .createStreaming(request("Tell me a story", 8))) {
            stream.stream().forEach(chunk -> chunk.choices().forEach(ch -> ch.delta().content().ifPresent(text::append)));
        }
        assertThat(text.toString()).isEqualTo(library("Tell me a story", 8));
    }

    @Test
    void concurrentRequestsAnswerAsEachAlone() throws Exception {
        List<String> prompts = List.of("One", "Two words", "A third, longer prompt here", "Four", "Five five",
                "Six sixes", "Seven", "Eight and more");
        ExecutorService pool = Executors.newFixedThreadPool(prompts.size());
        try {
            List<Future<String>> answers = new ArrayList<>();
            for (String p : prompts) {
                answers.add(pool.submit(() -> client.chat().completions().create(request(p, 6)).choices().getFirst()
                        .message().content().orElse("")));
            }
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(answers.get(i).get()).as("answer to %s", prompts.get(i)).isEqualTo(library(prompts.get(i), 6));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Log-probabilities of a real decoder: each is the log softmax of the logits a session of the library gives after
     * the prompt and the tokens before it; their bytes make the reply's text.
     */
    @Test
    void logprobsAreTheLibrarysLogSoftmax() {
        String user = "Hello there";
        ChatCompletion c = client.chat().completions().create(request(user, 6).toBuilder().logprobs(true)
                .topLogprobs(2L).build());
        var tokens = c.choices().getFirst().logprobs().orElseThrow().content().orElseThrow();
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        tokens.forEach(t -> t.bytes().orElseThrow().forEach(b -> bytes.write(b.intValue())));
        String text = c.choices().getFirst().message().content().orElseThrow();
        assertThat(bytes.toString(java.nio.charset.StandardCharsets.UTF_8)).isEqualTo(text);
        var messages = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.arrayNode();
        messages.addObject().put("role", "user").put("content", user);
        int[] prompt = model.encodeChat(io.moe4j.text.chat.ChatRequest.of(messages, true));
        try (var session = model.model().newSession()) {
            float[] logits = session.prefillLast(prompt);
            for (var t : tokens) {
                // the token the reply drew: greedy, the most likely one, as the top list's first entry says
                int id = io.moe4j.model.Logits.argmax(logits, 0, logits.length);
                assertThat(t.logprob()).isCloseTo(io.moe4j.testing.LogSoftmax.of(logits)[id],
                        org.assertj.core.api.Assertions.within(1e-4));
                assertThat(t.topLogprobs().getFirst().logprob()).isEqualTo(t.logprob());
                assertThat(t.bytes().orElseThrow()).isEqualTo(t.topLogprobs().getFirst().bytes().orElseThrow());
                logits = session.decode(id);
            }
        }
    }

    /**
     * A scored prompt (completions' echo with logprobs, as evaluation harnesses send it) longer than one scoring call
     * and one step's prompt budget: every prompt token's value is the log softmax of the library's own prefill logits
     * at the position before it, and the reply's token follows.
     */
    @Test
    void aScoredPromptIsTheLibrarysPrefillLogSoftmax() throws Exception {
        java.util.Random random = new java.util.Random(11);
        int vocab = model.model().vocabSize();
        int[] prompt = random.ints(300, 0, Math.min(vocab, 100_000)).toArray();
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var body = json.createObjectNode().put("model", "qwen3-random").put("echo", true).put("logprobs", 2)
                .put("max_tokens", 1).put("temperature", 0);
        var ids = body.putArray("prompt");
        for (int t : prompt) {
            ids.add(t);
        }
        var r = post("/v1/completions", body.toString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        var lp = json.readTree(r.body()).path("choices").get(0).path("logprobs");
        var values = lp.path("token_logprobs");
        var tops = lp.path("top_logprobs");
        assertThat(values.size()).isEqualTo(prompt.length + 1);
        assertThat(values.get(0).isNull()).isTrue();
        assertThat(tops.get(0).isNull()).isTrue();
        try (var session = model.model().newSession()) {
            float[] all = session.prefill(prompt);
            for (int i = 0; i < prompt.length; i++) {
                double[] row = io.moe4j.testing.LogSoftmax.of(java.util.Arrays.copyOfRange(all, i * vocab,
                        (i + 1) * vocab));
                // position i's row scores prompt token i + 1, or (the last) the reply's greedy token
                int next = i + 1 < prompt.length ? prompt[i + 1]
                        : io.moe4j.model.Logits.argmax(all, i * vocab, vocab);
                assertThat(values.get(i + 1).asDouble()).as("position %d", i + 1)
                        .isCloseTo(row[next], org.assertj.core.api.Assertions.within(1e-4));
                // the top two and the token itself where it is not among them (ids may share a text)
                assertThat(tops.get(i + 1).size()).isBetween(1, 3);
            }
        }
    }

    private static java.net.http.HttpResponse<String> post(String path, String body) throws Exception {
        try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
            return http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:"
                            + server.port() + path)).header("Content-Type", "application/json")
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
        }
    }

    /** vLLM's token routes: the tokenizer's ids for a prompt or a chat, and back to text. */
    @Test
    void tokenizeAndDetokenize() throws Exception {
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var r = json.readTree(post("/tokenize", "{\"prompt\": \"Hello world, again\"}").body());
        int[] want = model.tokenizer().encodePrompt("Hello world, again");
        assertThat(r.get("count").asInt()).isEqualTo(want.length);
        assertThat(json.convertValue(r.get("tokens"), int[].class)).isEqualTo(want);
        assertThat(r.get("max_model_len").asInt()).isEqualTo(model.model().contextLimit());
        var chat = json.readTree(post("/tokenize", """
                {"model": "qwen3-random", "messages": [{"role": "user", "content": "Hi there"}]}""").body());
        int[] rendered = new ModelText(model).renderChat(new ChatPrompt(List.of(new ChatMessage("user", "Hi there",
                json.readTree("{\"role\": \"user\", \"content\": \"Hi there\"}"))), null));
        assertThat(json.convertValue(chat.get("tokens"), int[].class)).isEqualTo(rendered);
        var back = json.readTree(post("/detokenize", "{\"tokens\": " + chat.get("tokens") + "}").body());
        assertThat(back.get("prompt").asText()).isEqualTo(model.tokenizer().decode(rendered)).contains("Hi there");
        assertThat(post("/detokenize", "{\"tokens\": [1, -3]}").body()).contains("tokens[1]");
        assertThat(post("/tokenize", "{\"model\": \"other\", \"prompt\": \"x\"}").statusCode()).isEqualTo(404);
        assertThat(post("/tokenize", "{\"prompt\": 5}").statusCode()).isEqualTo(400);
        for (String refused : new String[] {"\"add_generation_prompt\": false", "\"continue_final_message\": true",
                "\"return_token_strs\": true", "\"prompt\": \"x\""}) {
            var r2 = post("/tokenize", "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], " + refused + "}");
            assertThat(r2.statusCode()).as(refused).isEqualTo(400);
            assertThat(r2.body()).contains(refused.substring(1, refused.indexOf('"', 1)));
        }
    }

    /** The next turn of a conversation continues a kept sequence and answers as the library does from scratch. */
    @Test
    void aSecondTurnFromAKeptSequenceIsTheLibrarysAnswer() throws Exception {
        String first = client.chat().completions().create(request("Name a colour", 6)).choices().getFirst().message()
                .content().orElseThrow();
        String before = metrics();
        ChatCompletion second = client.chat().completions().create(ChatCompletionCreateParams.builder()
                .model("qwen3-random").addUserMessage("Name a colour").addAssistantMessage(first)
                .addUserMessage("And another?").temperature(0.0).maxCompletionTokens(6).build());
        String library = library(6, "user", "Name a colour", "assistant", first, "user", "And another?");
        assertThat(second.choices().getFirst().message().content().orElseThrow()).isEqualTo(library);
        assertThat(cachedTokens(metrics())).isGreaterThan(cachedTokens(before));
        assertThat(second.usage().orElseThrow().promptTokensDetails().orElseThrow().cachedTokens().orElseThrow())
                .as("usage.prompt_tokens_details.cached_tokens").isPositive();
    }

    /**
     * Requests sharing a long system prompt with a kept sequence, but less than half of what it holds, each get a
     * copy of its start (the kept one stays for the next), and answer as the library does from scratch.
     */
    @Test
    void requestsSharingASystemPromptEachGetACopyOfIt() throws Exception {
        String system = "You answer for the prefix copy test. " + "Keep every answer to a single word. ".repeat(6);
        client.chat().completions().create(ChatCompletionCreateParams.builder().model("qwen3-random")
                .addSystemMessage(system).addUserMessage("A long question: " + "word ".repeat(150)).temperature(0.0)
                .maxCompletionTokens(4).build());
        long copies = copies(metrics());
        for (String user : List.of("Name a colour", "Name a fruit")) {
            ChatCompletion c = client.chat().completions().create(ChatCompletionCreateParams.builder()
                    .model("qwen3-random").addSystemMessage(system).addUserMessage(user).temperature(0.0)
                    .maxCompletionTokens(6).build());
            assertThat(c.choices().getFirst().message().content().orElseThrow()).as(user)
                    .isEqualTo(library(6, "system", system, "user", user));
            assertThat(c.usage().orElseThrow().promptTokensDetails().orElseThrow().cachedTokens().orElseThrow())
                    .as("cached tokens of '%s'", user).isGreaterThanOrEqualTo(PrefixCache.FORK_LEAST);
        }
        assertThat(copies(metrics())).as("copies made").isGreaterThan(copies);
    }

    private static long copies(String metrics) {
        return metrics.lines().filter(l -> l.startsWith("moe4j_prefix_copies_total "))
                .mapToLong(l -> Long.parseLong(l.substring(l.indexOf(' ') + 1).strip())).findFirst().orElse(-1);
    }

    private static String metrics() throws Exception {
        try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
            return http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:"
                    + server.port() + "/metrics")).build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        }
    }

    private static long cachedTokens(String metrics) {
        return metrics.lines().filter(l -> l.startsWith("moe4j_prompt_tokens_cached_total "))
                .mapToLong(l -> Long.parseLong(l.substring(l.indexOf(' ') + 1).strip())).findFirst().orElse(-1);
    }
}
