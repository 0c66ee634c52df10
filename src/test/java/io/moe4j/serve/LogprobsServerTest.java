package io.moe4j.serve;

import com.openai.client.OpenAIClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionTokenLogprob;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionChoice;
import com.openai.models.completions.CompletionCreateParams;
import io.moe4j.serve.toy.ByteText;
import io.moe4j.serve.toy.ToyModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * Log-probabilities through the server, read with the official OpenAI SDK, against the log softmax of the logits a
 * second toy model gives for the same tokens.
 */
@Timeout(60)
class LogprobsServerTest {
    private static final String MODEL = "toy-model";
    private static OpenAiServer server;
    private static OpenAIClient client;

    @BeforeAll
    static void start() {
        ServedModel served = new ServedModel(MODEL, new ToyModel(256, 16, 0, 0), new ByteText());
        server = new OpenAiServer(served, new SchedulerConfig(4, 16, 64), ServerConfig.local(0)).start();
        client = com.openai.client.okhttp.OpenAIOkHttpClient.builder()
                .baseUrl("http://127.0.0.1:" + server.port() + "/v1").apiKey("unused").maxRetries(0)
                .timeout(java.time.Duration.ofSeconds(20)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    /** The log softmax of the toy's logits after {@code prompt} and then each of {@code reply}'s tokens. */
    private static List<double[]> reference(int[] prompt, int[] reply) {
        ToyModel toy = new ToyModel(256, 16, 0, 0);
        List<double[]> rows = new ArrayList<>();
        try (StepModel.Sequence s = toy.open()) {
            float[] logits = toy.step(List.of(s), List.of(prompt))[0];
            for (int token : reply) {
                rows.add(io.moe4j.testing.LogSoftmax.of(logits));
                logits = toy.step(List.of(s), List.of(new int[] {token}))[0];
            }
        }
        return rows;
    }

    private static int[] chatPrompt(String user) {
        return new ByteText().renderChat(new ChatPrompt(List.of(new ChatMessage("user", user, null)), null));
    }

    private static int[] ids(List<ChatCompletionTokenLogprob> tokens) {
        return tokens.stream().mapToInt(t -> t.bytes().orElseThrow().getFirst().intValue()).toArray();
    }

    private static void assertMatchesReference(String user, List<ChatCompletionTokenLogprob> tokens, int top) {
        int[] reply = ids(tokens);
        List<double[]> want = reference(chatPrompt(user), reply);
        for (int i = 0; i < reply.length; i++) {
            ChatCompletionTokenLogprob t = tokens.get(i);
            assertThat(t.logprob()).as("token %d", i).isCloseTo(want.get(i)[reply[i]], within(1e-5));
            assertThat(t.topLogprobs()).hasSize(top);
            for (int k = 0; k < top; k++) {
                ChatCompletionTokenLogprob.TopLogprob alt = t.topLogprobs().get(k);
                int id = alt.bytes().orElseThrow().getFirst().intValue();
                assertThat(alt.logprob()).isCloseTo(want.get(i)[id], within(1e-5));
                if (k > 0) {
                    assertThat(alt.logprob()).isLessThanOrEqualTo(t.topLogprobs().get(k - 1).logprob());
                }
            }
            if (top > 0) {
                // no token outside the list is more likely than the last one listed
                double last = t.topLogprobs().get(top - 1).logprob();
                long above = java.util.Arrays.stream(want.get(i)).filter(v -> v > last + 1e-6).count();
                assertThat(above).isLessThan(top);
            }
        }
    }

    @Test
    void chatLogprobsAreTheModelsLogSoftmax() {
        String user = "tell me a long story";
        ChatCompletion c = client.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL)
                .addUserMessage(user).temperature(0.0).maxCompletionTokens(12).logprobs(true).topLogprobs(3L).build());
        String text = c.choices().getFirst().message().content().orElseThrow();
        List<ChatCompletionTokenLogprob> tokens = c.choices().getFirst().logprobs().orElseThrow().content()
                .orElseThrow();
        assertThat(tokens).isNotEmpty();
        assertThat(String.join("", tokens.stream().map(ChatCompletionTokenLogprob::token).toList())).isEqualTo(text);
        // greedy: the drawn token is the most likely one
        for (ChatCompletionTokenLogprob t : tokens) {
            assertThat(t.topLogprobs().getFirst().token()).isEqualTo(t.token());
        }
        assertMatchesReference(user, tokens, 3);
    }

    /** The raw distribution's values, whatever the penalties do to the draw (as vLLM reports by default). */
    @Test
    void logprobsAreOfTheModelBeforePenalties() {
        String user = "tell me a long story";
        ChatCompletion c = client.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL)
                .addUserMessage(user).temperature(0.0).maxCompletionTokens(12).presencePenalty(2.0).logprobs(true)
                .build());
        List<ChatCompletionTokenLogprob> tokens = c.choices().getFirst().logprobs().orElseThrow().content()
                .orElseThrow();
        assertMatchesReference(user, tokens, 0);
    }

    @Test
    void streamedLogprobsAreTheWholeReplysInOrder() {
        String user = "a streamed story";
        ChatCompletionCreateParams params = ChatCompletionCreateParams.builder().model(MODEL).addUserMessage(user)
                .temperature(0.0).maxCompletionTokens(12).logprobs(true).topLogprobs(2L).build();
        List<ChatCompletionTokenLogprob> whole = client.chat().completions().create(params).choices().getFirst()
                .logprobs().orElseThrow().content().orElseThrow();
        List<ChatCompletionTokenLogprob> streamed = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(params)) {
            s.stream().forEach(chunk -> chunk.choices().forEach(choice -> {
                choice.delta().content().ifPresent(text::append);
                choice.logprobs().flatMap(ChatCompletionChunk.Choice.Logprobs::content).ifPresent(streamed::addAll);
            }));
        }
        assertThat(streamed).extracting(ChatCompletionTokenLogprob::token)
                .containsExactlyElementsOf(whole.stream().map(ChatCompletionTokenLogprob::token).toList());
        assertThat(streamed).extracting(ChatCompletionTokenLogprob::logprob)
                .containsExactlyElementsOf(whole.stream().map(ChatCompletionTokenLogprob::logprob).toList());
        assertThat(text.toString()).isEqualTo(String.join("", whole.stream().map(ChatCompletionTokenLogprob::token)
                .toList()));
    }

    @Test
    void completionsLogprobsInTheOlderShape() {
        String prompt = "Once upon a time";
        Completion c = client.completions().create(CompletionCreateParams.builder().model(MODEL).prompt(prompt)
                .temperature(0.0).maxTokens(10).logprobs(2L).build());
        CompletionChoice choice = c.choices().getFirst();
        CompletionChoice.Logprobs lp = choice.logprobs().orElseThrow();
        List<String> tokens = lp.tokens().orElseThrow();
        assertThat(String.join("", tokens)).isEqualTo(choice.text());
        List<Double> values = lp.tokenLogprobs().orElseThrow();
        List<double[]> want = reference(new ByteText().encode(prompt), tokens.stream().mapToInt(t -> t.charAt(0))
                .toArray());
        for (int i = 0; i < tokens.size(); i++) {
            assertThat(values.get(i)).isCloseTo(want.get(i)[tokens.get(i).charAt(0)], within(1e-5));
        }
        List<Long> offsets = lp.textOffset().orElseThrow();
        for (int i = 0; i < offsets.size(); i++) {
            assertThat(offsets.get(i)).isEqualTo(i);   // one character a token here
        }
        assertThat(lp.topLogprobs().orElseThrow()).allSatisfy(top -> assertThat(top._additionalProperties()).hasSize(2));
    }

    /** Sampled completions list each drawn token in its top_logprobs, beside the top ones (up to logprobs + 1). */
    @Test
    void completionsTopLogprobsAlwaysHoldTheDrawnToken() {
        String prompt = "Once upon a time";
        int outside = 0;
        for (long seed = 1; seed <= 4; seed++) {
            Completion c = client.completions().create(CompletionCreateParams.builder().model(MODEL).prompt(prompt)
                    .temperature(1.5).seed(seed).maxTokens(12).logprobs(1L).build());
            CompletionChoice.Logprobs lp = c.choices().getFirst().logprobs().orElseThrow();
            List<String> tokens = lp.tokens().orElseThrow();
            List<double[]> want = reference(new ByteText().encode(prompt), tokens.stream().mapToInt(t -> t.charAt(0))
                    .toArray());
            for (int i = 0; i < tokens.size(); i++) {
                var top = lp.topLogprobs().orElseThrow().get(i)._additionalProperties();
                boolean best = rank(want.get(i), tokens.get(i).charAt(0)) == 1;
                assertThat(top).containsKey(tokens.get(i)).hasSize(best ? 1 : 2);
                assertThat(top.get(tokens.get(i)).convert(Double.class))
                        .isCloseTo(lp.tokenLogprobs().orElseThrow().get(i), within(1e-9));
                outside += best ? 0 : 1;
            }
        }
        assertThat(outside).as("draws outside the top one, so the rule was exercised").isPositive();
    }

    /** 1 + the number of entries of {@code row} above {@code row[id]}. */
    private static int rank(double[] row, int id) {
        int above = 0;
        for (double v : row) {
            above += v > row[id] ? 1 : 0;
        }
        return 1 + above;
    }

    /**
     * The log softmax of the toy's logits after each prefix of {@code tokens}: row j is the distribution of token
     * j + 1 (the first token has no row).
     */
    private static List<double[]> prefixes(int[] tokens) {
        ToyModel toy = new ToyModel(256, 16, 0, 0);
        List<double[]> rows = new ArrayList<>();
        try (StepModel.Sequence s = toy.open()) {
            for (int t : tokens) {
                rows.add(io.moe4j.testing.LogSoftmax.of(toy.step(List.of(s), List.of(new int[] {t}))[0]));
            }
        }
        return rows;
    }

    /**
     * Echo with logprobs (what evaluation harnesses send to score a text): the prompt's tokens come first, the first
     * with null values, each other one's value its log-probability given those before it; then the reply's.
     */
    @Test
    void echoWithLogprobsScoresThePromptThenTheReply() {
        String prompt = "the cat sat";
        Completion c = client.completions().create(CompletionCreateParams.builder().model(MODEL).prompt(prompt)
                .temperature(0.0).maxTokens(5).logprobs(3L).echo(true).build());
        CompletionChoice choice = c.choices().getFirst();
        assertThat(choice.text()).startsWith(prompt);
        CompletionChoice.Logprobs lp = choice.logprobs().orElseThrow();
        List<String> tokens = lp.tokens().orElseThrow();
        List<Double> values = lp.tokenLogprobs().orElseThrow();
        var tops = lp.topLogprobs().orElseThrow();
        int[] promptIds = new ByteText().encode(prompt);
        int replyLength = (int) c.usage().orElseThrow().completionTokens();
        assertThat(tokens).hasSize(promptIds.length + replyLength);
        assertThat(String.join("", tokens)).isEqualTo(choice.text());
        // the SDK reads a JSON null in these lists as a missing value
        assertThat(values.getFirst()).isNull();
        assertThat(tops.getFirst()).isNull();
        int[] all = tokens.stream().mapToInt(t -> t.charAt(0)).toArray();
        assertThat(java.util.Arrays.copyOf(all, promptIds.length)).containsExactly(promptIds);
        List<double[]> want = prefixes(all);
        for (int i = 1; i < all.length; i++) {
            double[] row = want.get(i - 1);
            assertThat(values.get(i)).as("token %d", i).isCloseTo(row[all[i]], within(1e-5));
            var top = tops.get(i)._additionalProperties();
            // the top 3, and the token itself where it is not among them
            assertThat(top).containsKey(tokens.get(i)).hasSize(rank(row, all[i]) <= 3 ? 3 : 4);
            top.forEach((text, value) -> assertThat(value.convert(Double.class))
                    .isCloseTo(row[text.charAt(0)], within(1e-5)));
        }
        List<Long> offsets = lp.textOffset().orElseThrow();
        for (int i = 0; i < offsets.size(); i++) {
            assertThat(offsets.get(i)).isEqualTo(i);   // one character a token here
        }
    }

    /** max_tokens 0 with echo: the prompt alone, scored; nothing generated. */
    @Test
    void echoOfThePromptAloneScoresItWithoutAReply() {
        String prompt = "a b c d e f g";
        Completion c = client.completions().create(CompletionCreateParams.builder().model(MODEL).prompt(prompt)
                .maxTokens(0).logprobs(0L).echo(true).build());
        CompletionChoice choice = c.choices().getFirst();
        assertThat(choice.text()).isEqualTo(prompt);
        assertThat(choice.finishReason()).isEqualTo(CompletionChoice.FinishReason.LENGTH);
        assertThat(c.usage().orElseThrow().completionTokens()).isZero();
        assertThat(c.usage().orElseThrow().promptTokens()).isEqualTo(prompt.length());
        List<Double> values = choice.logprobs().orElseThrow().tokenLogprobs().orElseThrow();
        assertThat(values).hasSize(prompt.length());
        int[] ids = new ByteText().encode(prompt);
        List<double[]> want = prefixes(ids);
        double sum = 0;
        for (int i = 1; i < ids.length; i++) {
            sum += values.get(i);
            assertThat(values.get(i)).isCloseTo(want.get(i - 1)[ids[i]], within(1e-5));
        }
        assertThat(sum).isNegative();
        // a prompt that fills the context (256) is scored too: no reply is asked for
        String full = "abcdefgh".repeat(32);
        Completion filled = client.completions().create(CompletionCreateParams.builder().model(MODEL).prompt(full)
                .maxTokens(0).logprobs(0L).echo(true).build());
        assertThat(filled.choices().getFirst().logprobs().orElseThrow().tokenLogprobs().orElseThrow()).hasSize(256);
        // without logprobs: the prompt back, nothing computed
        Completion plain = client.completions().create(CompletionCreateParams.builder().model(MODEL).prompt(prompt)
                .maxTokens(0).echo(true).build());
        assertThat(plain.choices().getFirst().text()).isEqualTo(prompt);
        assertThat(plain.choices().getFirst().logprobs()).isEmpty();
    }

    @Test
    void streamedEchoCarriesThePromptsLogprobsFirst() {
        CompletionCreateParams params = CompletionCreateParams.builder().model(MODEL).prompt("so it goes")
                .temperature(0.0).maxTokens(6).logprobs(1L).echo(true).build();
        CompletionChoice.Logprobs whole = client.completions().create(params).choices().getFirst().logprobs()
                .orElseThrow();
        List<String> tokens = new ArrayList<>();
        List<Double> values = new ArrayList<>();
        List<Long> offsets = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        try (StreamResponse<Completion> s = client.completions().createStreaming(params)) {
            s.stream().forEach(chunk -> chunk.choices().forEach(choice -> {
                text.append(choice.text());
                choice.logprobs().ifPresent(lp -> {
                    tokens.addAll(lp.tokens().orElseThrow());
                    values.addAll(lp.tokenLogprobs().orElseThrow());
                    offsets.addAll(lp.textOffset().orElseThrow());
                });
            }));
        }
        assertThat(tokens).containsExactlyElementsOf(whole.tokens().orElseThrow());
        assertThat(values).containsExactlyElementsOf(whole.tokenLogprobs().orElseThrow());
        assertThat(offsets).containsExactlyElementsOf(whole.textOffset().orElseThrow());
        assertThat(text.toString()).isEqualTo(String.join("", tokens));
    }

    private static com.fasterxml.jackson.databind.JsonNode post(String path, String body) throws Exception {
        try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
            var r = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:"
                            + server.port() + path)).header("Content-Type", "application/json")
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            var tree = new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.body());
            return ((com.fasterxml.jackson.databind.node.ObjectNode) tree).put("status", r.statusCode());
        }
    }

    /**
     * vLLM's prompt_logprobs: for each prompt token after the first, that token's log-probability and rank (1 + how
     * many tokens are more likely) and the most likely ones, keyed by id; in a completion's choice, at a chat's top.
     */
    @Test
    void promptLogprobsAreEachPromptTokensValueAndRank() throws Exception {
        String prompt = "the cat sat";
        var r = post("/v1/completions", """
                {"model": "%s", "prompt": "%s", "max_tokens": 3, "temperature": 0, "prompt_logprobs": 2,
                 "echo": true, "logprobs": 1}""".formatted(MODEL, prompt));
        assertThat(r.path("status").asInt()).as(r.toString()).isEqualTo(200);
        var choice = r.path("choices").get(0);
        var scored = choice.path("prompt_logprobs");
        int[] ids = new ByteText().encode(prompt);
        assertThat(scored.size()).isEqualTo(ids.length);
        assertThat(scored.get(0).isNull()).isTrue();
        List<double[]> want = prefixes(ids);
        for (int i = 1; i < ids.length; i++) {
            double[] row = want.get(i - 1);
            var position = scored.get(i);
            var token = position.path(Integer.toString(ids[i]));
            assertThat(token.path("logprob").asDouble()).isCloseTo(row[ids[i]], within(1e-5));
            double value = row[ids[i]];
            long above = java.util.Arrays.stream(row).filter(v -> v > value).count();
            assertThat(token.path("rank").asLong()).isEqualTo(above + 1);
            assertThat(token.path("decoded_token").asText()).isEqualTo(String.valueOf((char) ids[i]));
            // the top two are the two most likely ids, ranks 1 and 2
            List<Integer> order = java.util.stream.IntStream.range(0, row.length).boxed()
                    .sorted((a, b) -> Double.compare(row[b], row[a])).limit(2).toList();
            for (int k = 0; k < 2; k++) {
                var top = position.path(Integer.toString(order.get(k)));
                assertThat(top.path("rank").asInt()).isEqualTo(k + 1);
                assertThat(top.path("logprob").asDouble()).isCloseTo(row[order.get(k)], within(1e-5));
            }
            assertThat(position.size()).isBetween(2, 3);
        }
        // the echo's own list keeps its own top count (1, and the token itself), though the prompt was scored with 2
        var tops = choice.path("logprobs").path("top_logprobs");
        var echoed = choice.path("logprobs").path("tokens");
        for (int i = 1; i < tops.size(); i++) {
            assertThat(tops.get(i).has(echoed.get(i).asText())).isTrue();
            assertThat(tops.get(i).size()).isBetween(1, 2);
        }
        var chat = post("/v1/chat/completions", """
                {"model": "%s", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 2,
                 "prompt_logprobs": 0}""".formatted(MODEL));
        assertThat(chat.path("status").asInt()).as(chat.toString()).isEqualTo(200);
        assertThat(chat.path("prompt_logprobs").size()).isEqualTo(chat.path("usage").path("prompt_tokens").asInt());
        assertThat(chat.path("prompt_logprobs").get(1).size()).isEqualTo(1);
        var streamed = post("/v1/completions", """
                {"model": "%s", "prompt": "x", "stream": true, "prompt_logprobs": 1}""".formatted(MODEL));
        assertThat(streamed.path("status").asInt()).isEqualTo(400);
        assertThat(streamed.path("error").path("param").asText()).isEqualTo("prompt_logprobs");
        var many = post("/v1/completions", """
                {"model": "%s", "prompt": "x", "prompt_logprobs": 21}""".formatted(MODEL));
        assertThat(many.path("status").asInt()).isEqualTo(400);
    }

    @Test
    void badLogprobsFieldsAreRefusedByName() {
        assertThatThrownBy(() -> client.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL)
                .addUserMessage("x").topLogprobs(3L).build())).isInstanceOf(BadRequestException.class)
                .hasMessageContaining("top_logprobs");
        assertThatThrownBy(() -> client.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL)
                .addUserMessage("x").logprobs(true).topLogprobs(21L).build())).isInstanceOf(BadRequestException.class)
                .hasMessageContaining("top_logprobs");
        assertThatThrownBy(() -> client.completions().create(CompletionCreateParams.builder().model(MODEL)
                .prompt("x").logprobs(-1L).build())).isInstanceOf(BadRequestException.class)
                .hasMessageContaining("logprobs");
    }
}
