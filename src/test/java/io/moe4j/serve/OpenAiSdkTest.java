package io.moe4j.serve;

import io.moe4j.generate.FinishReason;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.errors.OpenAIServiceException;
import com.openai.errors.UnauthorizedException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionChoice;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.completions.CompletionUsage;
import com.openai.models.models.Model;
import io.moe4j.serve.toy.ByteText;
import io.moe4j.serve.toy.ToyModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The server on loopback, driven by the official OpenAI Java SDK. */
@Timeout(60)
class OpenAiSdkTest {
    private static OpenAiServer server;
    private static OpenAIClient client;

    @BeforeAll
    static void start() {
        // eos when the hash is divisible by 16: answers end by themselves, at lengths that differ by prompt.
        ServedModel served = new ServedModel("toy-model", new ToyModel(256, 16, 0, 0), new ByteText());
        server = new OpenAiServer(served, new SchedulerConfig(4, 16, 64), ServerConfig.local(0)).start();
        client = client("unused");
    }

    static OpenAIClient client(String key) {
        return OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port() + "/v1").apiKey(key)
                .maxRetries(0).timeout(Duration.ofSeconds(20)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    private static ChatCompletionCreateParams.Builder chat(String user) {
        return ChatCompletionCreateParams.builder().model("toy-model").addUserMessage(user).temperature(0.0);
    }

    @Test
    void listsTheModel() {
        List<Model> models = client.models().list().data();
        assertThat(models).extracting(Model::id).containsExactly("toy-model");
        assertThat(client.models().retrieve("toy-model").id()).isEqualTo("toy-model");
        assertThatThrownBy(() -> client.models().retrieve("other")).isInstanceOf(NotFoundException.class);
    }

    @Test
    void chatCompletionWithUsage() {
        ChatCompletion c = client.chat().completions().create(chat("Hello there").maxCompletionTokens(12).build());
        ChatCompletion.Choice choice = c.choices().getFirst();
        String text = choice.message().content().orElseThrow();
        CompletionUsage usage = c.usage().orElseThrow();
        assertThat(c.model()).isEqualTo("toy-model");
        assertThat(c.id()).startsWith("chatcmpl-");
        int prompt = new ByteText().renderChat(new ChatPrompt(List.of(new ChatMessage("user", "Hello there", null)),
                null)).length;
        assertThat(usage.promptTokens()).isEqualTo(prompt);
        assertThat(usage.totalTokens()).isEqualTo(prompt + usage.completionTokens());
        if (choice.finishReason().equals(ChatCompletion.Choice.FinishReason.LENGTH)) {
            assertThat(usage.completionTokens()).isEqualTo(12);
            assertThat(text).hasSize(12);
        } else {
            assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.STOP);
            assertThat(text).hasSize((int) usage.completionTokens() - 1);
        }
        // Greedy: the same request gives the same answer.
        assertThat(client.chat().completions().create(chat("Hello there").maxCompletionTokens(12).build())
                .choices().getFirst().message().content()).contains(text);
    }

    @Test
    void streamedChatEqualsThePlainAnswerAndEndsWithUsage() {
        String plain = client.chat().completions().create(chat("Stream me").maxTokens(40).build())
                .choices().getFirst().message().content().orElseThrow();
        ChatCompletionCreateParams params = chat("Stream me").maxTokens(40)
                .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build()).build();
        StringBuilder text = new StringBuilder();
        List<String> finishes = new ArrayList<>();
        List<CompletionUsage> usages = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(params)) {
            stream.stream().forEach(chunk -> {
                chunk.usage().ifPresent(usages::add);
                for (ChatCompletionChunk.Choice choice : chunk.choices()) {
                    choice.delta().content().ifPresent(text::append);
                    choice.finishReason().ifPresent(f -> finishes.add(f.asString()));
                }
            });
        }
        assertThat(text.toString()).isEqualTo(plain);
        assertThat(finishes).hasSize(1);
        assertThat(usages).hasSize(1);
        assertThat(usages.getFirst().completionTokens()).isPositive();
    }

    @Test
    void stopStringsCutTheAnswer() {
        String full = client.chat().completions().create(chat("Cut me").maxTokens(30).build())
                .choices().getFirst().message().content().orElseThrow();
        assertThat(full.length()).as("answer long enough to cut").isGreaterThan(8);
        String stop = full.substring(5, 7);
        int at = full.indexOf(stop);
        ChatCompletion c = client.chat().completions().create(chat("Cut me").maxTokens(30)
                .stop(ChatCompletionCreateParams.Stop.ofStrings(List.of("#never#", stop))).build());
        assertThat(c.choices().getFirst().message().content()).contains(full.substring(0, at));
        assertThat(c.choices().getFirst().finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.STOP);
        // Streamed, the stop string never shows either.
        StringBuilder streamed = new StringBuilder();
        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions()
                .createStreaming(chat("Cut me").maxTokens(30).stop(stop).build())) {
            s.stream().forEach(ch -> ch.choices().forEach(x -> x.delta().content().ifPresent(streamed::append)));
        }
        assertThat(streamed.toString()).isEqualTo(full.substring(0, at));
    }

    @Test
    void completionsPlainAndStreamed() {
        CompletionCreateParams params = CompletionCreateParams.builder().model("toy-model").prompt("Once upon")
                .maxTokens(9).temperature(0.0).build();
        Completion c = client.completions().create(params);
        String text = c.choices().getFirst().text();
        assertThat(c.usage().orElseThrow().promptTokens()).isEqualTo(9);
        StringBuilder streamed = new StringBuilder();
        try (StreamResponse<Completion> s = client.completions().createStreaming(params)) {
            s.stream().forEach(chunk -> chunk.choices().forEach(ch -> streamed.append(ch.text())));
        }
        assertThat(streamed.toString()).isEqualTo(text);
    }

    @Test
    void seededSamplingRepeatsAndDiffersBySeed() {
        ChatCompletionCreateParams.Builder b = chat("Sample").temperature(1.0).topP(0.9).maxTokens(20);
        String a1 = client.chat().completions().create(b.seed(7).build()).choices().getFirst().message().content()
                .orElseThrow();
        String a2 = client.chat().completions().create(b.seed(7).build()).choices().getFirst().message().content()
                .orElseThrow();
        String other = client.chat().completions().create(b.seed(8).build()).choices().getFirst().message()
                .content().orElseThrow();
        assertThat(a1).isEqualTo(a2);
        assertThat(other).isNotEqualTo(a1);
    }

    @Test
    void errorsReachTheSdkAsOpenAiErrors() {
        assertThatThrownBy(() -> client.chat().completions().create(ChatCompletionCreateParams.builder()
                .model("gpt-4o").addUserMessage("hi").build()))
                .isInstanceOfSatisfying(NotFoundException.class, e -> {
                    assertThat(e.code()).contains("model_not_found");
                    assertThat(e.param()).contains("model");
                });
        assertThatThrownBy(() -> client.chat().completions().create(chat("hi").n(17).build()))
                .isInstanceOfSatisfying(BadRequestException.class, e -> assertThat(e.param()).contains("n"));
        assertThatThrownBy(() -> client.chat().completions().create(chat("hi").temperature(3.5).build()))
                .isInstanceOfSatisfying(BadRequestException.class,
                        e -> assertThat(e.param()).contains("temperature"));
        assertThatThrownBy(() -> client.chat().completions().create(chat("x".repeat(300)).build()))
                .isInstanceOfSatisfying(BadRequestException.class,
                        e -> assertThat(e.code()).contains("context_length_exceeded"));
        assertThatThrownBy(() -> client.chat().completions().create(chat("hi")
                .putAdditionalBodyProperty("response_format", JsonValue.from(java.util.Map.of("type", "json_object")))
                .build()))
                .isInstanceOfSatisfying(BadRequestException.class,
                        e -> assertThat(e.param()).contains("response_format"));
        // Streamed requests are refused the same way, before any event.
        assertThatThrownBy(() -> {
            try (var s = client.chat().completions().createStreaming(chat("hi").n(30).build())) {
                s.stream().count();
            }
        }).isInstanceOf(OpenAIServiceException.class);
        assertThat(client.chat().completions().create(chat("still here").maxTokens(3).build()).choices()).hasSize(1);
    }

    @Test
    void keepAliveCommentsAreSkippedBySdkStreams() {
        // 3 ms a step and one prompt token a step: about 20 comments go out before the first token.
        ServedModel served = new ServedModel("slow", new ToyModel(256, 0, 3_000_000, 0), new ByteText());
        try (OpenAiServer slow = new OpenAiServer(served, new SchedulerConfig(2, 2, 1),
                ServerConfig.local(0).withKeepAlive(Duration.ofMillis(5))).start()) {
            OpenAIClient c = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + slow.port() + "/v1")
                    .apiKey("none").maxRetries(0).build();
            try {
                ChatCompletionCreateParams p = ChatCompletionCreateParams.builder().model("slow")
                        .addUserMessage("a prompt of some length").maxTokens(6).temperature(0.0).build();
                String plain = c.chat().completions().create(p).choices().getFirst().message().content()
                        .orElseThrow();
                StringBuilder streamed = new StringBuilder();
                try (StreamResponse<ChatCompletionChunk> s = c.chat().completions().createStreaming(p)) {
                    s.stream().forEach(ch -> ch.choices().forEach(x -> x.delta().content().ifPresent(streamed::append)));
                }
                assertThat(streamed.toString()).isEqualTo(plain).hasSize(6);
            } finally {
                c.close();
            }
        }
    }

    @Test
    void aPortInUseIsAClearError() {
        ServedModel served = new ServedModel("toy", new ToyModel(64, 0, 0, 0), new ByteText());
        OpenAiServer second = new OpenAiServer(served, SchedulerConfig.defaults(), ServerConfig.local(server.port()));
        assertThatThrownBy(second::start).isInstanceOf(io.moe4j.MoeException.class)
                .hasMessageContaining("127.0.0.1:" + server.port());
        assertThat(client.models().list().data()).hasSize(1);
    }

    @Test
    void apiKeyIsRequiredWhenSet() {
        ServedModel served = new ServedModel("keyed", new ToyModel(128, 0, 0, 0), new ByteText());
        try (OpenAiServer keyed = new OpenAiServer(served, SchedulerConfig.defaults(),
                ServerConfig.local(0).withApiKey("s3cret")).start()) {
            String base = "http://127.0.0.1:" + keyed.port() + "/v1";
            ChatCompletionCreateParams p = ChatCompletionCreateParams.builder().model("keyed").addUserMessage("hi")
                    .maxTokens(3).build();
            OpenAIClient wrong = OpenAIOkHttpClient.builder().baseUrl(base).apiKey("guess").maxRetries(0).build();
            OpenAIClient right = OpenAIOkHttpClient.builder().baseUrl(base).apiKey("s3cret").maxRetries(0).build();
            try {
                assertThatThrownBy(() -> wrong.chat().completions().create(p))
                        .isInstanceOfSatisfying(UnauthorizedException.class,
                                e -> assertThat(e.code()).contains("invalid_api_key"));
                assertThatThrownBy(() -> wrong.models().list()).isInstanceOf(UnauthorizedException.class);
                assertThat(right.chat().completions().create(p).choices().getFirst().message().content())
                        .isPresent();
            } finally {
                wrong.close();
                right.close();
            }
        }
    }

    /** logit_bias moves a token's logit: +100 makes it the greedy choice at every step, -100 bans it. */
    @Test
    void logitBiasForcesAndBansTokens() {
        String plain = client.chat().completions().create(chat("tell me a long story about bias").maxCompletionTokens(8).build())
                .choices().getFirst().message().content().orElseThrow();
        ChatCompletionCreateParams.LogitBias forceA = ChatCompletionCreateParams.LogitBias.builder()
                .putAdditionalProperty("65", JsonValue.from(100)).build();
        String forced = client.chat().completions().create(chat("tell me a long story about bias").maxCompletionTokens(6).logitBias(forceA)
                .build()).choices().getFirst().message().content().orElseThrow();
        assertThat(forced).isEqualTo("AAAAAA");
        char first = plain.charAt(0);
        ChatCompletionCreateParams.LogitBias ban = ChatCompletionCreateParams.LogitBias.builder()
                .putAdditionalProperty(Integer.toString(first), JsonValue.from(-100)).build();
        String banned = client.chat().completions().create(chat("tell me a long story about bias").maxCompletionTokens(8).logitBias(ban)
                .build()).choices().getFirst().message().content().orElseThrow();
        assertThat(banned).as("greedy without the bias: " + plain).doesNotContain(String.valueOf(first));
    }

    /**
     * A presence penalty of 2 puts every letter the reply holds below every letter it does not (the toy's letters
     * sit in [0, 1)): no letter repeats, where the same greedy reply without it repeats some.
     */
    @Test
    void presencePenaltyKeepsLettersFromRepeating() {
        String prompt = "tell me a long story about penalties";
        String plain = client.chat().completions().create(chat(prompt).maxCompletionTokens(24).build())
                .choices().getFirst().message().content().orElseThrow();
        assertThat(plain.chars().distinct().count()).as(plain).isLessThan(plain.length());
        String penalized = client.chat().completions().create(chat(prompt).maxCompletionTokens(24)
                .presencePenalty(2.0).build()).choices().getFirst().message().content().orElseThrow();
        assertThat(penalized).isNotEmpty();
        assertThat(penalized.chars().distinct().count()).as(penalized).isEqualTo(penalized.length());
        String frequency = client.chat().completions().create(chat(prompt).maxCompletionTokens(24)
                .frequencyPenalty(2.0).build()).choices().getFirst().message().content().orElseThrow();
        assertThat(frequency.chars().distinct().count()).as(frequency).isEqualTo(frequency.length());
    }

    /** n choices: choice i is what one request with seed + i samples; usage counts the prompt once. */
    @Test
    void severalChoicesAreSeveralSeeds() {
        String prompt = "tell me a long story about choices";
        ChatCompletion c = client.chat().completions().create(chat(prompt).temperature(1.0).seed(40L).n(3L)
                .maxCompletionTokens(10).build());
        assertThat(c.choices()).extracting(ChatCompletion.Choice::index).containsExactly(0L, 1L, 2L);
        long completion = 0;
        for (int i = 0; i < 3; i++) {
            String alone = client.chat().completions().create(chat(prompt).temperature(1.0).seed(40L + i)
                    .maxCompletionTokens(10).build()).choices().getFirst().message().content().orElseThrow();
            assertThat(c.choices().get(i).message().content().orElseThrow()).as("choice %d", i).isEqualTo(alone);
            completion += alone.length();   // one token a byte here
        }
        assertThat(c.usage().orElseThrow().completionTokens()).isEqualTo(completion);
        int promptTokens = new ByteText().renderChat(new ChatPrompt(List.of(new ChatMessage("user", prompt, null)),
                null)).length;
        assertThat(c.usage().orElseThrow().promptTokens()).isEqualTo(promptTokens);
        assertThat(c.choices().stream().map(ch -> ch.message().content().orElseThrow()).distinct().count())
                .as("three samples at temperature 1").isGreaterThan(1);

        // streamed: each chunk names its choice; the texts reassemble to the whole response's
        List<StringBuilder> texts = List.of(new StringBuilder(), new StringBuilder(), new StringBuilder());
        List<String> finishes = new ArrayList<>(java.util.Collections.nCopies(3, null));
        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(chat(prompt)
                .temperature(1.0).seed(40L).n(3L).maxCompletionTokens(10).build())) {
            s.stream().forEach(chunk -> chunk.choices().forEach(ch -> {
                ch.delta().content().ifPresent(texts.get((int) ch.index())::append);
                ch.finishReason().ifPresent(f -> finishes.set((int) ch.index(), f.asString()));
            }));
        }
        for (int i = 0; i < 3; i++) {
            assertThat(texts.get(i).toString()).isEqualTo(c.choices().get(i).message().content().orElseThrow());
            assertThat(finishes.get(i)).isNotNull();
        }

        // as many choices as the queue holds are queued together, every time (each one alone could find the
        // queue still holding its siblings)
        for (int round = 0; round < 3; round++) {
            assertThat(client.chat().completions().create(chat(prompt).n(16L).maxCompletionTokens(2).build())
                    .choices()).hasSize(16);
        }
        Completion text = client.completions().create(CompletionCreateParams.builder().model("toy-model")
                .prompt(prompt).temperature(1.0).seed(7L).n(2L).maxTokens(6).build());
        assertThat(text.choices()).extracting(com.openai.models.completions.CompletionChoice::index)
                .containsExactly(0L, 1L);
    }

    /**
     * vLLM's end rules: ignore_eos runs a reply to its max tokens, min_tokens holds the end back that long,
     * stop_token_ids end a reply at a token of the caller's choosing (the toy ends a reply when its hash says so).
     */
    @Test
    void ignoreEosMinTokensAndStopTokenIds() {
        String prompt = "Hello there";
        ChatCompletion plain = client.chat().completions().create(chat(prompt).maxCompletionTokens(40).build());
        String text = plain.choices().getFirst().message().content().orElseThrow();
        assertThat(plain.choices().getFirst().finishReason().asString()).isEqualTo("stop");
        assertThat(text.length()).isLessThan(40);
        ChatCompletion running = client.chat().completions().create(chat(prompt).maxCompletionTokens(40)
                .putAdditionalBodyProperty("ignore_eos", JsonValue.from(true)).build());
        assertThat(running.usage().orElseThrow().completionTokens()).isEqualTo(40);
        assertThat(running.choices().getFirst().finishReason().asString()).isEqualTo("length");
        assertThat(running.choices().getFirst().message().content().orElseThrow()).startsWith(text);
        int min = text.length() + 3;
        ChatCompletion held = client.chat().completions().create(chat(prompt).maxCompletionTokens(40)
                .putAdditionalBodyProperty("min_tokens", JsonValue.from(min)).build());
        assertThat(held.usage().orElseThrow().completionTokens()).isGreaterThanOrEqualTo(min);
        assertThat(held.choices().getFirst().message().content().orElseThrow()).startsWith(text);
        // the reply's third character as a stop token: the reply ends before it, which is not shown
        ChatCompletion cut = client.chat().completions().create(chat(prompt).maxCompletionTokens(40)
                .putAdditionalBodyProperty("stop_token_ids", JsonValue.from(List.of((int) text.charAt(2)))).build());
        String shown = cut.choices().getFirst().message().content().orElseThrow();
        assertThat(shown).isEqualTo(text.substring(0, text.indexOf(text.charAt(2))));
        assertThat(cut.choices().getFirst().finishReason().asString()).isEqualTo("stop");
    }

    /** The completions API's echo: each reply starts with the prompt, whole and streamed. */
    @Test
    void completionsEchoThePrompt() {
        CompletionCreateParams params = CompletionCreateParams.builder().model("toy-model").prompt("Once upon")
                .temperature(0.0).maxTokens(6).echo(true).build();
        String whole = client.completions().create(params).choices().getFirst().text();
        String plain = client.completions().create(params.toBuilder().echo(false).build()).choices().getFirst().text();
        assertThat(whole).isEqualTo("Once upon" + plain);
        StringBuilder streamed = new StringBuilder();
        try (StreamResponse<Completion> s = client.completions().createStreaming(params)) {
            s.stream().forEach(c -> c.choices().forEach(ch -> streamed.append(ch.text())));
        }
        assertThat(streamed.toString()).isEqualTo(whole);
        // token ids: the prompt decoded
        String ids = client.completions().create(CompletionCreateParams.builder().model("toy-model")
                .prompt(CompletionCreateParams.Prompt.ofArrayOfTokens(List.of(72L, 105L))).temperature(0.0).maxTokens(3)
                .echo(true).build()).choices().getFirst().text();
        assertThat(ids).startsWith("Hi");
    }

    /**
     * Several prompts in one completions request (as evaluation harnesses batch them): prompt p's choices are indices
     * p * n .. p * n + n - 1, each the reply that prompt gets alone; the usage counts every prompt once.
     */
    @Test
    void aBatchOfPromptsAnswersEachAsAlone() {
        List<String> prompts = List.of("Once upon", "In a hole", "It was");
        CompletionCreateParams.Builder one = CompletionCreateParams.builder().model("toy-model").temperature(0.0)
                .maxTokens(5).echo(true);
        Completion batch = client.completions().create(one.prompt(CompletionCreateParams.Prompt.ofArrayOfStrings(
                prompts)).n(2).build());
        assertThat(batch.choices()).hasSize(6);
        long promptTokens = 0;
        for (int p = 0; p < prompts.size(); p++) {
            Completion alone = client.completions().create(one.prompt(prompts.get(p)).n(1).build());
            String want = alone.choices().getFirst().text();
            assertThat(want).startsWith(prompts.get(p));
            promptTokens += alone.usage().orElseThrow().promptTokens();
            for (int i = 0; i < 2; i++) {
                int index = p * 2 + i;
                CompletionChoice choice = batch.choices().stream().filter(c -> c.index() == index).findFirst()
                        .orElseThrow();
                assertThat(choice.text()).as("choice %d", index).isEqualTo(want);
            }
        }
        assertThat(batch.usage().orElseThrow().promptTokens()).isEqualTo(promptTokens);
        // token-id prompts too, streamed
        Map<Long, StringBuilder> streamed = new java.util.TreeMap<>();
        try (StreamResponse<Completion> s = client.completions().createStreaming(CompletionCreateParams.builder()
                .model("toy-model").temperature(0.0).maxTokens(3).echo(true)
                .prompt(CompletionCreateParams.Prompt.ofArrayOfTokenArrays(List.of(List.of(72L, 105L),
                        List.of(79L, 107L)))).build())) {
            s.stream().forEach(c -> c.choices().forEach(ch -> streamed.computeIfAbsent(ch.index(),
                    k -> new StringBuilder()).append(ch.text())));
        }
        assertThat(streamed).hasSize(2);
        assertThat(streamed.get(0L).toString()).startsWith("Hi");
        assertThat(streamed.get(1L).toString()).startsWith("Ok");
    }
}
