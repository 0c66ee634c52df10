package io.moe4j.text.chat.output;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.moe4j.text.chat.ChatRequest;
import io.moe4j.text.chat.ChatTemplate;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** The harmony parser on text gpt-oss's own template writes, whole and in pieces of every size. */
class HarmonyParserTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static Path gptOss() {
        return Path.of(System.getProperty("moe4j.shared", "../shared"), "tokenizers", "gpt-oss");
    }

    private static JsonNode fixtureLine(String tokenizer, boolean withTools) throws IOException {
        for (String line : Files.readAllLines(gptOss().getParent().resolve("expected.jsonl"))) {
            JsonNode n = JSON.readTree(line);
            if (n.path("kind").asText().equals("chat") && n.path("tokenizer").asText().equals(tokenizer)
                    && n.has("tools") == withTools && n.path("add_generation_prompt").asBoolean()) {
                return n;
            }
        }
        throw new AssertionError("no such fixture line");
    }

    private static List<HarmonyMessage> parseWhole(HarmonyParser p, String text) {
        p.feed(text);
        p.finish();
        return p.messages();
    }

    @Test
    void aRenderedConversationWithAToolCallSplitsIntoItsMessages() throws IOException {
        JsonNode line = fixtureLine("gpt-oss", true);
        JsonNode call = line.get("messages").get(2).get("tool_calls").get(0).get("function");
        List<HarmonyMessage> ms = parseWhole(HarmonyParser.forConversation(), line.get("text").asText());

        assertThat(ms).extracting(HarmonyMessage::role)
                .containsExactly("system", "developer", "user", "assistant", "functions.get_weather", "assistant");
        assertThat(ms.get(0).content()).contains("Reasoning: medium");
        assertThat(ms.get(2).content()).isEqualTo(line.get("messages").get(1).get("content").asText());
        HarmonyMessage toolCall = ms.get(3);
        assertThat(toolCall.isToolCall()).isTrue();
        assertThat(toolCall.functionName()).isEqualTo(call.get("name").asText());
        assertThat(toolCall.channel()).isEqualTo("commentary");
        assertThat(toolCall.contentType()).isEqualTo("json");
        assertThat(toolCall.end()).isEqualTo("<|call|>");
        assertThat(JSON.readTree(toolCall.content())).isEqualTo(call.get("arguments"));
        HarmonyMessage result = ms.get(4);
        assertThat(result.recipient()).isEqualTo("assistant");
        assertThat(result.isToolCall()).isFalse();
        assertThat(JSON.readTree(result.content()).asText()).isEqualTo(line.get("messages").get(3).get("content").asText());
        // The generation prompt: an assistant header and nothing after it.
        assertThat(ms.get(5).content()).isEmpty();
        assertThat(ms.get(5).end()).isNull();
    }

    /** The reply the model should produce is what the template writes for a finished turn after the prompt. */
    private static String[] promptAndReply(String messagesJson) throws IOException {
        ChatTemplate t = ChatTemplate.load(gptOss());
        ArrayNode all = (ArrayNode) JSON.readTree(messagesJson);
        ArrayNode head = all.deepCopy();
        head.remove(head.size() - 1);
        var clock = ChatRequest.fixedDate("2026-01-15");
        String full = t.render(ChatRequest.of(all, false).withClock(clock));
        String prompt = t.render(ChatRequest.of(head, true).withClock(clock));
        assertThat(full).startsWith(prompt);
        return new String[] {prompt, full.substring(prompt.length())};
    }

    @Test
    void aReplyWithAnalysisAndFinalChannels() throws IOException {
        String[] pr = promptAndReply("""
                [{"role": "user", "content": "What is 2+2?"},
                 {"role": "assistant", "thinking": "Simple arithmetic: 2+2=4.", "content": "4"}]""");
        assertThat(pr[0]).endsWith("<|start|>assistant");
        List<HarmonyMessage> ms = parseWhole(HarmonyParser.forAssistantReply(), pr[1]);
        assertThat(ms).hasSize(2);
        assertThat(ms.get(0)).isEqualTo(new HarmonyMessage("assistant", "analysis", null, null,
                "Simple arithmetic: 2+2=4.", "<|end|>"));
        assertThat(ms.get(1)).isEqualTo(new HarmonyMessage("assistant", "final", null, null, "4", "<|return|>"));
        assertThat(ms.get(1).isFinal()).isTrue();
        assertThat(ms.get(0).isAnalysis()).isTrue();
    }

    @Test
    void everySplitOfTheTextGivesTheSameMessagesAndDeltas() throws IOException {
        String[] pr = promptAndReply("""
                [{"role": "user", "content": "Weather?"},
                 {"role": "assistant", "thinking": "Need <the> tool | <|maybe.", "tool_calls": [{"type": "function",
                   "function": {"name": "get_weather", "arguments": {"city": "Paris <|x|>"}}}]}]""");
        String reply = pr[1] + "<|start|>assistant<|channel|>final<|message|>It is 18 < 20.<|return|>";
        List<HarmonyMessage> whole = parseWhole(HarmonyParser.forAssistantReply(), reply);
        assertThat(whole).hasSize(3);
        assertThat(whole.get(0).content()).isEqualTo("Need <the> tool | <|maybe.");
        assertThat(whole.get(1).functionName()).isEqualTo("get_weather");
        assertThat(whole.get(2).content()).isEqualTo("It is 18 < 20.");

        Random random = new Random(7);
        for (int trial = 0; trial < 300; trial++) {
            HarmonyParser p = HarmonyParser.forAssistantReply();
            List<HarmonyEvent> events = new ArrayList<>();
            int at = 0;
            while (at < reply.length()) {
                int n = trial == 0 ? 1 : 1 + random.nextInt(12);
                int end = Math.min(reply.length(), at + n);
                events.addAll(p.feed(reply.substring(at, end)));
                at = end;
            }
            events.addAll(p.finish());
            assertThat(p.messages()).isEqualTo(whole);
            StringBuilder[] deltas = {new StringBuilder(), new StringBuilder(), new StringBuilder()};
            int starts = 0;
            for (HarmonyEvent e : events) {
                if (e instanceof HarmonyEvent.ContentDelta d) {
                    deltas[d.index()].append(d.text());
                } else if (e instanceof HarmonyEvent.MessageStart) {
                    starts++;
                }
            }
            assertThat(starts).isEqualTo(3);
            for (int i = 0; i < 3; i++) {
                assertThat(deltas[i].toString()).isEqualTo(whole.get(i).content());
            }
        }
    }

    @Test
    void theModelsOwnToolCallHeaderWithConstrain() {
        List<HarmonyMessage> ms = parseWhole(HarmonyParser.forAssistantReply(),
                "<|channel|>analysis<|message|>Call it.<|end|><|start|>assistant<|channel|>commentary"
                        + " to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>");
        assertThat(ms.get(1)).isEqualTo(new HarmonyMessage("assistant", "commentary", "functions.get_weather", "json",
                "{\"city\":\"Paris\"}", "<|call|>"));
        assertThat(ms.get(1).isToolCall()).isTrue();
    }

    @Test
    void cutOffTextAndStrayTextAreKept() {
        HarmonyParser p = HarmonyParser.forAssistantReply();
        p.feed("<|channel|>final<|message|>Half an ans");
        List<HarmonyEvent> tail = p.finish();
        assertThat(tail).hasSize(1);
        assertThat(p.messages()).containsExactly(new HarmonyMessage("assistant", "final", null, null, "Half an ans", null));

        List<HarmonyMessage> stray = parseWhole(HarmonyParser.forConversation(), "loose text<|end|><|start|>user<|message|>hi<|end|><");
        assertThat(stray).containsExactly(
                new HarmonyMessage("assistant", null, null, null, "loose text", "<|end|>"),
                new HarmonyMessage("user", null, null, null, "hi", "<|end|>"),
                new HarmonyMessage("assistant", null, null, null, "<", null));
    }
}
