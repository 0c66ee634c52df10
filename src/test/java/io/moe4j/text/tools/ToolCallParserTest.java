package io.moe4j.text.tools;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.text.tools.ToolStreamEvent.ContentDelta;
import io.moe4j.text.tools.ToolStreamEvent.ToolCallDelta;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Tool calls rendered by each family's own chat template parse back to the same names and arguments.
 *
 * <p>Sources: the chat lines of {@code ../shared/tokenizers/expected.jsonl} (Qwen3's line with a tool call), and
 * {@code tools/rendered-tool-calls.jsonl}, rendered with jinja2 3.1 from the templates in
 * {@code ../shared/tokenizers/{qwen3,deepseek-v3}/tokenizer_config.json} the way transformers renders them (trim_blocks,
 * lstrip_blocks, tojson without ASCII escaping): several calls a turn, content beside calls, escapes and non-ASCII
 * in arguments, and DeepSeek-V3 calls. DeepSeek-V3's template renders calls only for an assistant message whose
 * content is null, so the shared fixture's DeepSeek line (content "") holds none and the rendered file covers it.
 */
class ToolCallParserTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** An assistant turn as the template wrote it, with the message it came from. */
    record Turn(String family, String text, JsonNode message) {
    }

    static List<Turn> turns() throws IOException {
        List<Turn> turns = new ArrayList<>();
        Path shared = Path.of(System.getProperty("moe4j.shared", "../shared"), "tokenizers", "expected.jsonl");
        for (String line : Files.readAllLines(shared, StandardCharsets.UTF_8)) {
            JsonNode n = JSON.readTree(line);
            if (n.path("kind").asText().equals("chat") && n.path("tokenizer").asText().equals("qwen3")
                    && line.contains("tool_calls")) {
                turns.addAll(split("qwen3", n.get("text").asText(), n.get("messages")));
            }
        }
        assertThat(turns).as("the shared fixture's Qwen3 tool-call line").isNotEmpty();
        try (InputStream in = ToolCallParserTest.class.getResourceAsStream("/tools/rendered-tool-calls.jsonl")) {
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                JsonNode n = JSON.readTree(line);
                turns.addAll(split(n.get("family").asText(), n.get("text").asText(), n.get("messages")));
            }
        }
        return turns;
    }

    /** The assistant turns of a rendered chat, paired with the assistant messages in order. */
    static List<Turn> split(String family, String text, JsonNode messages) {
        List<JsonNode> assistants = new ArrayList<>();
        messages.forEach(m -> {
            if (m.path("role").asText().equals("assistant")) {
                assistants.add(m);
            }
        });
        boolean qwen = family.equals("qwen3");
        String[] parts = text.split(qwen ? "<\\|im_start\\|>assistant\n" : "<｜Assistant｜>", -1);
        List<Turn> turns = new ArrayList<>();
        for (int i = 1; i < parts.length && turns.size() < assistants.size(); i++) {
            String part = parts[i];
            String turn;
            if (qwen) {
                turn = part.substring(0, part.indexOf("<|im_end|>"));
                // reasoning is split off before tool calls are read
                turn = turn.replaceFirst("^<think>[\\s\\S]*?</think>\\s*", "");
            } else {
                int end = part.length();
                for (String stop : new String[] {"<｜end▁of▁sentence｜>", "<｜tool▁outputs▁begin｜>"}) {
                    int at = part.indexOf(stop);
                    end = at >= 0 ? Math.min(end, at) : end;
                }
                turn = part.substring(0, end);
            }
            turns.add(new Turn(family, turn, assistants.get(turns.size())));
        }
        assertThat(turns).hasSize(assistants.size());
        return turns;
    }

    static List<JsonNode[]> expectedCalls(JsonNode message) throws IOException {
        List<JsonNode[]> calls = new ArrayList<>();
        for (JsonNode c : message.path("tool_calls")) {
            JsonNode f = c.path("function");
            JsonNode args = f.get("arguments");
            calls.add(new JsonNode[] {f.get("name"), args.isTextual() ? JSON.readTree(args.asText()) : args});
        }
        return calls;
    }

    static void assertSameCalls(List<ToolCall> got, List<JsonNode[]> expected, String text) throws IOException {
        assertThat(got).as(text).hasSize(expected.size());
        for (int i = 0; i < got.size(); i++) {
            assertThat(got.get(i).name()).isEqualTo(expected.get(i)[0].asText());
            assertThat(JSON.readTree(got.get(i).arguments())).as(got.get(i).arguments()).isEqualTo(expected.get(i)[1]);
        }
    }

    @Test
    void templateRenderedCallsParseBack() throws IOException {
        int withCalls = 0;
        for (Turn t : turns()) {
            ParsedOutput out = ToolCallParser.forFamily(t.family()).parse(t.text(), ToolCallIds.sequential("c"));
            assertSameCalls(out.toolCalls(), expectedCalls(t.message()), t.text());
            JsonNode content = t.message().get("content");
            assertThat(out.content()).as(t.text()).isEqualTo(content == null || content.isNull() ? ""
                    : content.asText().strip());
            for (int i = 0; i < out.toolCalls().size(); i++) {
                assertThat(out.toolCalls().get(i).id()).isEqualTo("c" + i);
            }
            withCalls += out.hasToolCalls() ? 1 : 0;
        }
        assertThat(withCalls).isGreaterThanOrEqualTo(5); // qwen3 fixture + 3 rendered qwen3 + 2 deepseek turns
    }

    @Test
    void truncatedOutputKeepsCompleteCallsAndTheRestAsText() throws IOException {
        for (Turn t : turns()) {
            List<JsonNode[]> expected = expectedCalls(t.message());
            if (expected.isEmpty()) {
                continue;
            }
            ToolCallParser parser = ToolCallParser.forFamily(t.family());
            String end = t.family().equals("qwen3") ? "</tool_call>" : "<｜tool▁call▁end｜>";
            String start = t.family().equals("qwen3") ? "<tool_call>" : "<｜tool▁call▁begin｜>";
            for (int cut = 0; cut <= t.text().length(); cut++) {
                String prefix = t.text().substring(0, cut);
                ParsedOutput out = parser.parse(prefix, ToolCallIds.sequential("c"));
                int closed = count(prefix, end);
                assertSameCalls(out.toolCalls(), expected.subList(0, closed), prefix);
                int lastStart = prefix.lastIndexOf(start);
                if (lastStart > prefix.lastIndexOf(end)) {
                    // the unclosed call is content, as written
                    assertThat(out.content()).as(prefix).endsWith(prefix.substring(lastStart).strip());
                }
            }
        }
    }

    private static int count(String s, String marker) {
        int n = 0;
        for (int i = s.indexOf(marker); i >= 0; i = s.indexOf(marker, i + 1)) {
            n++;
        }
        return n;
    }

    @Test
    void malformedCallsStayText() {
        ToolCallParser qwen = ToolCallParser.forFamily("qwen3");
        String[] bad = {
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}\n</tool_call>",
            "<tool_call>\n{\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
            "<tool_call>not json</tool_call>",
            "<tool_call>\n{\"name\": \"f\", \"arguments\": [1, 2]}\n</tool_call>",
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {}} trailing\n</tool_call>",
            "<tool_call>\n{\"name\": 3, \"arguments\": {}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{not an object\"}\n</tool_call>",
            "I would write <tool_call> here, and a < b </tool_call> too",
        };
        for (String text : bad) {
            ParsedOutput out = qwen.parse(text);
            assertThat(out.toolCalls()).as(text).isEmpty();
            assertThat(out.content()).isEqualTo(text.strip());
        }
        ParsedOutput mixed = qwen.parse("Sure.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n"
                + "</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\n</tool_call>",
                ToolCallIds.sequential("c"));
        assertThat(mixed.toolCalls()).containsExactly(new ToolCall("c0", "a", "{\"x\": 1}"));
        assertThat(mixed.content()).isEqualTo(
                "Sure.\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\n</tool_call>");
        // a start marker with a second start inside: the first is text, the second a call
        ParsedOutput restarted = qwen.parse("<tool_call>oops <tool_call>{\"name\": \"a\", \"arguments\": {}}"
                + "</tool_call>", ToolCallIds.sequential("c"));
        assertThat(restarted.toolCalls()).extracting(ToolCall::name).containsExactly("a");
        assertThat(restarted.content()).isEqualTo("<tool_call>oops");
        // arguments given as a JSON string holding an object
        assertThat(qwen.parse("<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"k\\\": 2}\"}</tool_call>")
                .toolCalls()).extracting(ToolCall::arguments).containsExactly("{\"k\": 2}");

        ToolCallParser deepseek = ToolCallParser.forFamily("deepseek-v3");
        String[] badDeepSeek = {
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function get_weather\n```json\n{}\n```<｜tool▁call▁end｜>",
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \n```<｜tool▁call▁end｜>",
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"x\"}<｜tool▁call▁end｜>",
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>\n```json\n{}\n```<｜tool▁call▁end｜>",
        };
        for (String text : badDeepSeek) {
            ParsedOutput out = deepseek.parse(text);
            assertThat(out.toolCalls()).as(text).isEmpty();
            assertThat(out.content()).contains("<｜tool▁call▁begin｜>");
        }
        // the V3.1 layout, without type and fence
        assertThat(deepseek.parse("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"zone\": \"UTC\"}"
                + "<｜tool▁call▁end｜><｜tool▁calls▁end｜>").toolCalls())
                .extracting(ToolCall::name, ToolCall::arguments).containsExactly(
                        org.assertj.core.groups.Tuple.tuple("get_time", "{\"zone\": \"UTC\"}"));
    }

    @Test
    void textWithoutCallsIsContent() {
        ToolCallParser qwen = ToolCallParser.forFamily("qwen3");
        assertThat(qwen.parse("a < b, and <tool").content()).isEqualTo("a < b, and <tool");
        assertThat(qwen.parse("plain\n\nanswer").toolCalls()).isEmpty();
        assertThat(qwen.parse("").content()).isEmpty();
    }

    @Test
    void streamedPiecesGiveWhatTheWholeTextGives() throws IOException {
        SplittableRandom random = new SplittableRandom(26);
        for (Turn t : turns()) {
            ToolCallParser parser = ToolCallParser.forFamily(t.family());
            String text = t.text() + (t.family().equals("qwen3") ? "\nDone <now>." : "");
            ParsedOutput whole = parser.parse(text, ToolCallIds.sequential("c"));
            for (int trial = 0; trial < 20; trial++) {
                ToolCallStream stream = parser.stream(ToolCallIds.sequential("c"));
                List<ToolStreamEvent> events = new ArrayList<>();
                int at = 0;
                while (at < text.length()) {
                    int len = 1 + random.nextInt(trial % 2 == 0 ? 4 : 24);
                    int next = Math.min(text.length(), at + len);
                    events.addAll(stream.push(text.substring(at, next)));
                    at = next;
                }
                events.addAll(stream.finish());
                StringBuilder content = new StringBuilder();
                List<ToolCall> calls = new ArrayList<>();
                for (ToolStreamEvent e : events) {
                    switch (e) {
                        case ContentDelta(String s) -> {
                            assertThat(s).doesNotContain("<tool_call", "<｜tool");
                            content.append(s);
                        }
                        case ToolCallDelta(int index, ToolCall call) -> {
                            assertThat(index).isEqualTo(calls.size());
                            calls.add(call);
                        }
                    }
                }
                assertThat(content.toString()).isEqualTo(whole.content());
                assertThat(calls).isEqualTo(whole.toolCalls());
            }
        }
    }

    @Test
    void randomMixturesOfMarkersNeverFailAndStreamAsTheyParse() {
        String[] pieces = {"<tool_call>", "</tool_call>", "<tool", "_call>", "</tool", "\n", " ", "x", "<", ">",
            "{\"name\": \"a\", \"arguments\": {\"k\": [1]}}", "{\"name\": \"b\"", "}", "\"",
            "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "function", "<｜tool▁sep｜>", "f\n```json\n",
            "{\"q\": 2}", "\n```", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "<｜tool"};
        SplittableRandom random = new SplittableRandom(7);
        for (String family : new String[] {"qwen3", "deepseek-v3"}) {
            ToolCallParser parser = ToolCallParser.forFamily(family);
            for (int trial = 0; trial < 2000; trial++) {
                StringBuilder text = new StringBuilder();
                int n = random.nextInt(12);
                for (int k = 0; k < n; k++) {
                    text.append(pieces[random.nextInt(pieces.length)]);
                }
                ParsedOutput whole = parser.parse(text.toString(), ToolCallIds.sequential("c"));
                ToolCallStream stream = parser.stream(ToolCallIds.sequential("c"));
                StringBuilder content = new StringBuilder();
                List<ToolCall> calls = new ArrayList<>();
                List<ToolStreamEvent> events = new ArrayList<>();
                int at = 0;
                while (at < text.length()) {
                    int next = Math.min(text.length(), at + 1 + random.nextInt(6));
                    events.addAll(stream.push(text.substring(at, next)));
                    at = next;
                }
                events.addAll(stream.finish());
                for (ToolStreamEvent e : events) {
                    switch (e) {
                        case ContentDelta(String c) -> content.append(c);
                        case ToolCallDelta(int index, ToolCall call) -> calls.add(call);
                    }
                }
                assertThat(content.toString()).as(text.toString()).isEqualTo(whole.content());
                assertThat(calls).as(text.toString()).isEqualTo(whole.toolCalls());
            }
        }
    }

    @Test
    void unknownFamilyIsNamed() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ToolCallParser.forFamily("llama-9"))
                .isInstanceOf(io.moe4j.MoeException.class).hasMessageContaining("'llama-9'")
                .hasMessageContaining("qwen3");
    }
}
