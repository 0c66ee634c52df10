package io.moe4j.generate;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.moe4j.cli.MoeCommand;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.testing.RandomModels;
import io.moe4j.text.chat.ChatRequest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** A random two-layer Qwen3-MoE with the real Qwen3 tokenizer and chat template, through the library and the CLI. */
class EndToEndTest {
    @TempDir
    static Path tmp;
    static Path dir;
    static MoeModel model;

    @BeforeAll
    static void writeAndLoad() {
        dir = RandomModels.qwen3(tmp.resolve("qwen3-random"), 11);
        model = MoeModel.load(dir, ModelOptions.defaults().withThreads(2));
    }

    @AfterAll
    static void close() {
        model.close();
    }

    static GenerationRequest greedy(int maxTokens) {
        return new GenerationRequest(maxTokens, SamplingParams.greedy(), List.of(), model.eosIds());
    }

    static int[] chatPrompt(String user) {
        ArrayNode messages = JsonNodeFactory.instance.arrayNode();
        messages.addObject().put("role", "user").put("content", user);
        return model.encodeChat(ChatRequest.of(messages, true));
    }

    @Test
    void greedyTokensAreTheArgmaxOfAFullPassOverEverythingBeforeThem() {
        int[] prompt = chatPrompt("Hello there");
        GenerationResult r;
        try (Session s = model.model().newSession()) {
            r = new Generator(model.tokenizer()).generate(s, prompt, greedy(6), piece -> { }, () -> false);
        }
        assertThat(r.promptTokens()).isEqualTo(prompt.length);
        assertThat(r.tokens()).isNotEmpty().hasSizeLessThanOrEqualTo(6);
        int[] fed = prompt;
        for (int token : r.tokens()) {
            try (Session s = model.model().newSession()) {
                float[] last = s.prefillLast(fed);
                assertThat(Sampler.argmax(last, 0, last.length, null)).isEqualTo(token);
            }
            fed = append(fed, token);
        }
        int[] shown = r.finishReason() == FinishReason.STOP
                ? Arrays.copyOf(r.tokens(), r.tokens().length - 1) : r.tokens();
        assertThat(r.text()).isEqualTo(model.tokenizer().decode(shown));
    }

    @Test
    void sampledRunsRepeatWithTheirSeed() {
        GenerationRequest req = new GenerationRequest(5, new SamplingParams(1.0, 50, 0.9, 0, 1234), List.of(),
                model.eosIds());
        GenerationResult a = model.complete("Once upon a time", req, p -> { }, () -> false);
        GenerationResult b = model.complete("Once upon a time", req, p -> { }, () -> false);
        assertThat(a.tokens()).isEqualTo(b.tokens());
        assertThat(a.text()).isEqualTo(b.text());
    }

    @Test
    void aConversationReusesItsCacheAndAnswersAsAFreshSessionWould() {
        try (Conversation chat = model.newConversation()) {
            chat.say("Hi!", greedy(4), p -> { }, () -> false);
            GenerationResult second = chat.say("And then?", greedy(4), p -> { }, () -> false);
            assertThat(chat.reusedLastTurn()).isGreaterThan(0);

            ChatRequest again = new ChatRequest(withoutLastAnswer(chat.messages()), true, null, java.util.Map.of(), null);
            int[] prompt = model.encodeChat(again);
            try (Session fresh = model.model().newSession()) {
                GenerationResult alone = new Generator(model.tokenizer()).generate(fresh, prompt, greedy(4), p -> { },
                        () -> false);
                assertThat(second.tokens()).isEqualTo(alone.tokens());
            }
        }
    }

    /**
     * A turn beyond the context fails by name and is not taken: the history and the cache stay as they were, and the
     * next turn answers as a fresh session given the conversation without it does.
     */
    @Test
    void aTurnBeyondTheContextIsNotTakenAndTheConversationGoesOn() {
        try (MoeModel limited = MoeModel.load(dir, ModelOptions.defaults().withThreads(2).withContextLimit(200));
                Conversation chat = limited.newConversation()) {
            GenerationRequest greedy = new GenerationRequest(4, SamplingParams.greedy(), List.of(), limited.eosIds());
            chat.say("Hi!", greedy, p -> { }, () -> false);
            int held = chat.messages().size();
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> chat.say("word ".repeat(400), greedy, p -> { },
                    () -> false)).isInstanceOf(io.moe4j.MoeException.class).hasMessageContaining("context");
            assertThat(chat.messages().size()).as("the failed turn left no message").isEqualTo(held);
            GenerationResult next = chat.say("And then?", greedy, p -> { }, () -> false);
            assertThat(chat.reusedLastTurn()).as("the cache survived the failed turn").isGreaterThan(0);
            ChatRequest again = new ChatRequest(withoutLastAnswer(chat.messages()), true, null, java.util.Map.of(),
                    null);
            try (Session fresh = limited.model().newSession()) {
                GenerationResult alone = new Generator(limited.tokenizer()).generate(fresh,
                        limited.encodeChat(again), greedy, p -> { }, () -> false);
                assertThat(next.tokens()).isEqualTo(alone.tokens());
            }
        }
    }

    @Test
    void cancellingStopsBeforeTheNextToken() {
        GenerationResult r = model.complete("Hello", greedy(50), p -> { }, () -> true);
        assertThat(r.finishReason()).isEqualTo(FinishReason.CANCELLED);
        assertThat(r.tokens()).isEmpty();
    }

    @Test
    void moeGenerateStreamsTheSameAnswerAsTheLibrary() {
        GenerationResult lib;
        try (Session s = model.model().newSession()) {
            lib = new Generator(model.tokenizer()).generate(s, chatPrompt("Hello there"), greedy(6), p -> { },
                    () -> false);
        }
        Captured c = run(null, "generate", "--model", dir.toString(), "--prompt", "Hello there", "--chat",
                "--max-tokens", "6", "--temperature", "0", "--threads", "2");
        assertThat(c.code).isZero();
        assertThat(c.out).isEqualTo(lib.text() + System.lineSeparator());
        assertThat(c.err).contains("prompt tokens").contains("tokens/s decode").contains(" (auto: ");
    }

    @Test
    void moeChatTalksOverSeveralTurns() {
        Captured c = run("Hi!\n/help\nAnd then?\n/exit\n", "chat", "--model", dir.toString(), "--max-tokens", "4",
                "--temperature", "0", "--threads", "2");
        assertThat(c.code).isZero();
        assertThat(c.out).as("no prompts into a pipe").doesNotStartWith("> ");
        // a command word is not sent to the model: two turns, two answers
        assertThat(c.err).contains("unknown command /help");
        assertThat(c.err.lines().filter(l -> l.contains("from the cache")).count()).isEqualTo(2);
    }

    /** A --context beyond the model's positions is said, with the context it gets. */
    @Test
    void aContextBeyondTheModelsPositionsIsSaid() {
        Captured c = run(null, "generate", "--model", dir.toString(), "--prompt", "Hi", "--max-tokens", "2",
                "--temperature", "0", "--threads", "2", "--context", "99999999", "--no-warmup");
        assertThat(c.code).as(c.err).isZero();
        assertThat(c.err).contains("--context 99999999 is more than the model's max_position_embeddings");
    }

    @Test
    void moeChatGoesOnAfterATurnBeyondTheContext() {
        Captured c = run("Hi!\n" + "word ".repeat(400) + "\nAnd then?\n/exit\n", "chat", "--model", dir.toString(),
                "--max-tokens", "4", "--temperature", "0", "--threads", "2", "--context", "200", "--no-warmup");
        assertThat(c.code).as(c.err).isZero();
        assertThat(c.err).contains("context overflow").contains("the turn was not taken");
        assertThat(c.err.lines().filter(l -> l.contains("from the cache")).count()).isEqualTo(2);
    }

    private static ArrayNode withoutLastAnswer(ArrayNode messages) {
        messages.remove(messages.size() - 1);
        return messages;
    }

    private static int[] append(int[] a, int x) {
        int[] out = Arrays.copyOf(a, a.length + 1);
        out[a.length] = x;
        return out;
    }

    record Captured(int code, String out, String err) {
    }

    static synchronized Captured run(String stdin, String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        InputStream oldIn = System.in;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            if (stdin != null) {
                System.setIn(new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
            }
            int code = MoeCommand.execute(args);
            return new Captured(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
            System.setIn(oldIn);
        }
    }
}
