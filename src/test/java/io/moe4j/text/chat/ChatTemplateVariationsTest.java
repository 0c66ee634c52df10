package io.moe4j.text.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.text.chat.jinja.TemplateRaisedException;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The three fixture templates on inputs beyond the fixture lines: Qwen3 with reasoning in and out of the content,
 * several tool calls and responses, {@code enable_thinking=false}; DeepSeek-V3 with several system messages and
 * tool calls; gpt-oss with developer messages, model identity, reasoning effort, built-in tools, tool schemas with
 * arrays, unions, nullable and defaults, analysis messages, and the two inputs its template refuses; and
 * {@code continue_final_message} on all three.
 * {@code template-variations.jsonl} was written by transformers 5.18 ({@code render_jinja_template}, jinja2 3.1.6)
 * with the special tokens of each {@code tokenizer_config.json} and {@code datetime.now()} fixed to the line's date;
 * an {@code error} line holds the message the template raised.
 */
class ChatTemplateVariationsTest {
    @TestFactory
    List<DynamicTest> rendersAsTransformers() throws IOException {
        ObjectMapper json = new ObjectMapper();
        List<JsonNode> lines = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(
                ChatTemplateVariationsTest.class.getResourceAsStream("template-variations.jsonl"), StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                lines.add(json.readTree(line));
            }
        }
        assertThat(lines).hasSizeGreaterThanOrEqualTo(23);
        Map<String, ChatTemplate> templates = new HashMap<>();
        List<DynamicTest> tests = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            JsonNode line = lines.get(i);
            String model = line.get("tokenizer").asText();
            tests.add(DynamicTest.dynamicTest(model + " variation " + i, () -> {
                ChatTemplate t = templates.computeIfAbsent(model,
                        m -> ChatTemplate.load(ChatTemplateFixtureTest.fixtures().resolve(m)));
                ChatRequest request = ChatRequest.fromJson(line);
                if (line.has("text")) {
                    assertThat(t.render(request)).isEqualTo(line.get("text").asText());
                } else {
                    assertThatThrownBy(() -> t.render(request))
                            .isInstanceOf(TemplateRaisedException.class)
                            .hasMessageContaining("chat_template.jinja")
                            .satisfies(e -> assertThat(((TemplateRaisedException) e).templateMessage())
                                    .isEqualTo(line.get("error").asText()));
                }
            }));
        }
        return tests;
    }
}
