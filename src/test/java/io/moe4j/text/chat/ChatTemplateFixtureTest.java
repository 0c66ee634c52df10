package io.moe4j.text.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Every chat line of the tokenizer fixtures (rendered by transformers with jinja2) renders to the same text. */
class ChatTemplateFixtureTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static Path fixtures() {
        return Path.of(System.getProperty("moe4j.shared", "../shared"), "tokenizers");
    }

    static List<JsonNode> chatLines() throws IOException {
        List<JsonNode> lines = new ArrayList<>();
        for (String line : Files.readAllLines(fixtures().resolve("expected.jsonl"))) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode n = JSON.readTree(line);
            if ("chat".equals(n.path("kind").asText())) {
                lines.add(n);
            }
        }
        return lines;
    }

    @Test
    void fixturesHoldChatLinesOfAllThreeModels() throws IOException {
        List<JsonNode> lines = chatLines();
        assertThat(lines).hasSizeGreaterThanOrEqualTo(15);
        assertThat(lines.stream().map(n -> n.get("tokenizer").asText()).distinct())
                .containsExactlyInAnyOrder("deepseek-v3", "gpt-oss", "qwen3");
    }

    @TestFactory
    List<DynamicTest> everyChatLineRendersExactly() throws IOException {
        Map<String, ChatTemplate> templates = new HashMap<>();
        List<DynamicTest> tests = new ArrayList<>();
        int i = 0;
        for (JsonNode line : chatLines()) {
            String model = line.get("tokenizer").asText();
            String label = model + " #" + (i++) + " agp=" + line.path("add_generation_prompt").asBoolean()
                    + (line.has("tools") ? " tools" : "") + " " + line.get("messages").size() + " messages";
            tests.add(DynamicTest.dynamicTest(label, () -> {
                ChatTemplate t = templates.computeIfAbsent(model, m -> ChatTemplate.load(fixtures().resolve(m)));
                assertThat(t.render(ChatRequest.fromJson(line))).isEqualTo(line.get("text").asText());
            }));
        }
        return tests;
    }
}
