package io.moe4j.serve;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import io.moe4j.serve.toy.ByteText;
import io.moe4j.serve.toy.ToyModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Many streaming clients at once, through the OpenAI SDK: a fixed list of requests (greedy and seeded sampling,
 * different lengths, some ending at eos) is first served one at a time, then by 16 and by 64 concurrent clients; every
 * answer and finish reason must equal the one served alone, and steps must really have batched.
 */
@Timeout(120)
class ConcurrentClientsTest {
    private static final int DISTINCT = 64;
    private static ToyModel model;
    private static OpenAiServer server;
    private static OpenAIClient client;
    private static List<String> alone;

    @BeforeAll
    static void start() {
        // 1 ms a step plus 20 µs a token fed: a batch of many sequences costs about what one does, as on real hardware.
        model = new ToyModel(1024, 40, 1_000_000, 20_000);
        server = new OpenAiServer(new ServedModel("toy", model, new ByteText()), new SchedulerConfig(16, 64, 256),
                ServerConfig.local(0)).start();
        client = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port() + "/v1").apiKey("none")
                .maxRetries(0).timeout(Duration.ofSeconds(60)).build();
        alone = new ArrayList<>();
        for (int i = 0; i < DISTINCT; i++) {
            alone.add(streamed(i));
        }
        assertThat(model.largestBatch()).as("served alone: one sequence a step").isEqualTo(1);
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    private static ChatCompletionCreateParams params(int i) {
        ChatCompletionCreateParams.Builder b = ChatCompletionCreateParams.builder().model("toy")
                .addSystemMessage("You answer question " + i + ".")
                .addUserMessage("Question " + i + ": " + "why ".repeat(i % 7))
                .maxCompletionTokens(8 + (i * 5) % 40);
        return i % 4 == 3 ? b.temperature(0.8).seed(1000 + i).build() : b.temperature(0.0).build();
    }

    /** One request, streamed; the text and the finish reason as one string. */
    private static String streamed(int i) {
        StringBuilder text = new StringBuilder();
        List<String> finish = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> s = client.chat().completions().createStreaming(params(i))) {
            s.stream().forEach(chunk -> chunk.choices().forEach(c -> {
                c.delta().content().ifPresent(text::append);
                c.finishReason().ifPresent(f -> finish.add(f.asString()));
            }));
        }
        assertThat(finish).as("request %d", i).hasSize(1);
        return text + " | " + finish.getFirst();
    }

    @ParameterizedTest(name = "{0} clients, {1} requests")
    @CsvSource({"16, 64", "64, 128"})
    void concurrentStreamsAnswerAsIfAlone(int clients, int requests) throws Exception {
        long tokensBefore = server.metrics().generatedTokens();
        long stepsBefore = server.metrics().steps();
        long start = System.nanoTime();
        List<Future<String>> answers = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(clients)) {
            for (int r = 0; r < requests; r++) {
                int i = r % DISTINCT;
                answers.add(pool.submit(() -> streamed(i)));
            }
            pool.shutdown();
            assertThat(pool.awaitTermination(90, TimeUnit.SECONDS)).isTrue();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        for (int r = 0; r < requests; r++) {
            assertThat(answers.get(r).get()).as("request %d", r).isEqualTo(alone.get(r % DISTINCT));
        }
        long tokens = server.metrics().generatedTokens() - tokensBefore;
        long steps = server.metrics().steps() - stepsBefore;
        System.out.printf("%d clients, %d requests: %d tokens in %.2f s (%.0f tokens/s), %d steps, %.1f sequences "
                + "a step on average%n", clients, requests, tokens, seconds, tokens / seconds, steps,
                (double) tokens / steps);
        assertThat(model.largestBatch()).isGreaterThan(4);
        assertThat(model.openSequences()).isZero();
        assertThat(server.scheduler().queueLength()).isZero();
    }
}
