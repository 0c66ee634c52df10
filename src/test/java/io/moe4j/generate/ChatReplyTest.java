package io.moe4j.generate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.moe4j.generate.constraint.ResponseFormat;
import io.moe4j.model.ModelOptions;
import io.moe4j.testing.RandomModels;
import io.moe4j.testing.SchemaCheck;
import io.moe4j.text.tools.ToolCall;
import io.moe4j.text.tools.ToolChoice;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The library's chat turn with a response format and forced tool calls, on a random Qwen3-MoE. */
@Timeout(120)
class ChatReplyTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    @TempDir
    static Path tmp;
    static MoeModel model;

    @BeforeAll
    static void load() {
        model = MoeModel.load(RandomModels.qwen3(tmp.resolve("qwen3"), 21), ModelOptions.defaults().withThreads(2));
    }

    @AfterAll
    static void close() {
        model.close();
    }

    private static ArrayNode user(String text) {
        ArrayNode messages = JSON.createArrayNode();
        messages.addObject().put("role", "user").put("content", text);
        return messages;
    }

    private static GenerationRequest sampled(int maxTokens, long seed) {
        return new GenerationRequest(maxTokens, new SamplingParams(1.0, 0, 1.0, 0, seed), List.of("}"),
                model.eosIds());
    }

    /**
     * With max tokens far past the context, the constrained answer still closes where the context ends: the
     * generator gives the constraint the context's room, not only what max tokens leaves.
     */
    @Test
    void aResponseFormatClosesItsAnswerBeforeTheContextEnds() throws Exception {
        JsonNode schema = JSON.readTree("""
                {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array",
                 "items": {"type": "string"}}}, "required": ["name", "tags"]}""");
        ArrayNode messages = user("JSON please");
        int promptTokens = model.tokenizer().encode(model.chatTemplate().orElseThrow()
                .render(io.moe4j.text.chat.ChatRequest.of(messages, true))).length;
        // The session holds the prompt and 30 more positions; the last token drawn needs none.
        int limit = promptTokens + 30;
        try (MoeModel limited = MoeModel.load(model.directory(),
                ModelOptions.defaults().withThreads(2).withContextLimit(limit))) {
            ResponseFormat format = ResponseFormat.parse(JSON.createObjectNode().put("type", "json_schema")
                    .set("json_schema", JSON.createObjectNode().set("schema", schema)), limited.chatOutputs().trie());
            for (long seed = 0; seed < 3; seed++) {
                ChatReply reply = limited.chat(new ChatGeneration(messages, null, null, format, Map.of(),
                        sampled(100_000, seed)), e -> { }, () -> false);
                assertThat(reply.generation().promptTokens()).isEqualTo(promptTokens);
                assertThat(reply.generation().tokens().length).isLessThanOrEqualTo(limit + 1 - promptTokens);
                // the random model writes its string on until the budget closes it: a length
                assertThat(reply.generation().finishReason()).as(reply.answer()).isEqualTo(FinishReason.LENGTH);
                assertThat(SchemaCheck.errors(schema, JSON.readTree(reply.answer().strip()))).as(reply.answer())
                        .isEmpty();
            }
        }
    }

    @Test
    void aResponseFormatGivesAValidAnswerAndTheEventsAddUp() throws Exception {
        JsonNode schema = JSON.readTree("""
                {"type": "object", "properties": {"ok": {"type": "boolean"}, "tags": {"type": "array",
                 "items": {"enum": ["a", "b"]}, "maxItems": 2}}, "required": ["ok", "tags"]}""");
        ResponseFormat format = ResponseFormat.parse(JSON.createObjectNode().put("type", "json_schema")
                .set("json_schema", JSON.createObjectNode().set("schema", schema)), model.chatOutputs().trie());
        for (long seed = 0; seed < 3; seed++) {
            StringBuilder answer = new StringBuilder();
            StringBuilder reasoning = new StringBuilder();
            ChatReply reply = model.chat(new ChatGeneration(user("JSON please"), null, null, format, Map.of(),
                    sampled(40, seed)), e -> {
                        switch (e) {
                            case ReplyReader.Event.Answer(String t) -> answer.append(t);
                            case ReplyReader.Event.Reasoning(String t) -> reasoning.append(t);
                            case ReplyReader.Event.Call c -> throw new AssertionError("no tools were offered");
                        }
                    }, () -> false);
            // the stop string "}" does not cut the constrained JSON
            assertThat(SchemaCheck.errors(schema, JSON.readTree(reply.answer().strip()))).as(reply.answer()).isEmpty();
            assertThat(answer.toString()).isEqualTo(reply.answer());
            assertThat(reasoning.toString()).isEqualTo(reply.reasoning());
            assertThat(reply.generation().finishReason()).isEqualTo(FinishReason.STOP);
        }
    }

    @Test
    void aNamedToolChoiceMakesOneValidCall() throws Exception {
        ArrayNode tools = (ArrayNode) JSON.readTree("""
                [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object",
                  "properties": {"id": {"type": "integer"}, "exact": {"type": "boolean"}}, "required": ["id"]}}}]""");
        List<ToolCall> streamed = new ArrayList<>();
        ChatReply reply = model.chat(new ChatGeneration(user("Look up 7"), tools, new ToolChoice.Named("lookup"), null,
                Map.of(), sampled(48, 5)), e -> {
                    if (e instanceof ReplyReader.Event.Call c) {
                        streamed.add(c.call());
                    }
                }, () -> false);
        assertThat(reply.toolCalls()).hasSize(1).isEqualTo(streamed);
        ToolCall call = reply.toolCalls().getFirst();
        assertThat(call.name()).isEqualTo("lookup");
        assertThat(SchemaCheck.errors(tools.get(0).path("function").path("parameters"),
                JSON.readTree(call.arguments()))).isEmpty();
        assertThat(reply.answer()).isEmpty();
    }
}
