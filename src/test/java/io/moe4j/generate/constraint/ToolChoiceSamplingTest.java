package io.moe4j.generate.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import io.moe4j.text.tools.ToolCall;
import io.moe4j.text.tools.ToolCallIds;
import io.moe4j.text.tools.ToolChoiceSchema;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** tool_choice "required" and named, constrained on the gpt-oss vocabulary with random logits. */
class ToolChoiceSamplingTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOOLS = """
            [{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"},
                 "unit": {"type": "string", "enum": ["c", "f"], "default": "c"}}, "required": ["city"]}}},
             {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
               "properties": {"zone": {"type": "string"}, "h24": {"type": "boolean"}}}}},
             {"type": "function", "function": {"name": "ping"}}]""";

    static ByteLevelVocabulary vocabulary;
    static TokenTrie trie;
    static int eos;

    @BeforeAll
    static void load() throws IOException {
        vocabulary = ByteLevelVocabulary.cached("gpt-oss");
        trie = ByteLevelVocabulary.cachedTrie("gpt-oss");
        eos = vocabulary.addedToken("<|return|>");
    }

    @Test
    void requiredGivesCallsWhoseArgumentsValidate() throws IOException {
        JsonNode tools = JSON.readTree(TOOLS);
        JsonGrammar grammar = JsonGrammar.of(ToolChoiceSchema.required(tools), trie);
        for (long seed = 1; seed <= 10; seed++) {
            String text = ConstrainedSamplingTest.generate(grammar, trie, vocabulary, eos, seed, 96);
            List<ToolCall> calls = ToolChoiceSchema.calls(text, ToolCallIds.sequential("c"));
            assertThat(calls).as(text).isNotEmpty();
            if (System.getenv("MOE4J_SHOW") != null) {
                System.out.println("required: " + text.replace("\n", "\\n") + " -> " + calls);
            }
            for (ToolCall call : calls) {
                JsonNode parameters = parameters(tools, call.name());
                assertThat(SubsetValidator.validate(parameters, JSON.readTree(call.arguments())))
                        .as(call.toString()).isNull();
            }
        }
    }

    @Test
    void namedGivesOneCallToThatFunction() throws IOException {
        JsonNode tools = JSON.readTree(TOOLS);
        JsonGrammar grammar = JsonGrammar.of(ToolChoiceSchema.named(tools, "get_weather"), trie);
        for (long seed = 1; seed <= 5; seed++) {
            String text = ConstrainedSamplingTest.generate(grammar, trie, vocabulary, eos, seed, 64);
            List<ToolCall> calls = ToolChoiceSchema.calls(text, ToolCallIds.sequential("c"));
            assertThat(calls).hasSize(1);
            assertThat(calls.getFirst().name()).isEqualTo("get_weather");
            assertThat(SubsetValidator.validate(parameters(tools, "get_weather"),
                    JSON.readTree(calls.getFirst().arguments()))).isNull();
        }
        assertThatThrownBy(() -> ToolChoiceSchema.named(tools, "get_wether")).isInstanceOf(MoeException.class)
                .hasMessageContaining("'get_wether'");
    }

    private static JsonNode parameters(JsonNode tools, String name) {
        for (JsonNode t : tools) {
            if (t.path("function").path("name").asText().equals(name)) {
                JsonNode p = t.path("function").get("parameters");
                return p == null ? JSON.createObjectNode().put("type", "object") : p;
            }
        }
        throw new AssertionError("no tool " + name);
    }
}
