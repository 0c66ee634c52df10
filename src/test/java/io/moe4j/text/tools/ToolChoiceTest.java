package io.moe4j.text.tools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import io.moe4j.generate.constraint.JsonGrammar;
import io.moe4j.generate.constraint.JsonMatcher;
import io.moe4j.generate.constraint.ResponseFormat;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Test;

class ToolChoiceTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOOLS = """
            [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
               "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
             {"type": "function", "function": {"name": "ping"}}]""";

    @Test
    void choicesAndTheirSchemas() throws IOException {
        JsonNode tools = JSON.readTree(TOOLS);
        assertThat(ToolChoice.parse(null, tools)).isEqualTo(new ToolChoice.Auto());
        assertThat(ToolChoice.parse(null, null)).isEqualTo(new ToolChoice.None());
        assertThat(ToolChoice.parse(JSON.readTree("\"none\""), tools).schema(tools)).isNull();
        ToolChoice required = ToolChoice.parse(JSON.readTree("\"required\""), tools);
        JsonGrammar any = JsonGrammar.of(required.schema(tools));
        assertThat(JsonMatcher.matches(any, "[{\"name\":\"ping\",\"arguments\":{\"x\":1}},"
                + "{\"arguments\":{\"city\":\"Oslo\"},\"name\":\"get_weather\"}]")).isTrue();
        assertThat(JsonMatcher.isPrefix(any, "[{\"name\":\"pong\"")).isFalse();
        assertThat(JsonMatcher.isPrefix(any, "[]")).isFalse();
        assertThat(JsonMatcher.isPrefix(any, "[{\"name\":\"get_weather\",\"arguments\":{}}")).isFalse();
        ToolChoice named = ToolChoice.parse(JSON.readTree(
                "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}"), tools);
        assertThat(named).isEqualTo(new ToolChoice.Named("get_weather"));
        String doc = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}";
        assertThat(JsonMatcher.matches(JsonGrammar.of(named.schema(tools)), doc)).isTrue();
        List<ToolCall> calls = ToolChoiceSchema.calls(doc, ToolCallIds.sequential("c"));
        assertThat(calls).containsExactly(new ToolCall("c0", "get_weather", "{\"city\":\"Oslo\"}"));
    }

    @Test
    void badChoicesNameTheField() throws IOException {
        JsonNode tools = JSON.readTree(TOOLS);
        assertThatThrownBy(() -> ToolChoice.parse(JSON.readTree(
                "{\"type\": \"function\", \"function\": {\"name\": \"nope\"}}"), tools))
                .isInstanceOf(MoeException.class).hasMessageStartingWith("tool_choice:").hasMessageContaining("'nope'");
        assertThatThrownBy(() -> ToolChoice.parse(JSON.readTree("\"always\""), tools))
                .isInstanceOf(MoeException.class).hasMessageStartingWith("tool_choice:");
        assertThatThrownBy(() -> ToolChoice.parse(JSON.readTree("\"required\""), null))
                .isInstanceOf(MoeException.class).hasMessageContaining("tools");
    }

    @Test
    void responseFormats() throws IOException {
        assertThat(ResponseFormat.parse(null).isConstrained()).isFalse();
        assertThat(ResponseFormat.parse(JSON.readTree("{\"type\": \"text\"}")).isConstrained()).isFalse();
        ResponseFormat object = ResponseFormat.parse(JSON.readTree("{\"type\": \"json_object\"}"));
        assertThat(JsonMatcher.matches(object.grammar(), "{\"a\":1}")).isTrue();
        ResponseFormat schema = ResponseFormat.parse(JSON.readTree(
                "{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"n\", \"strict\": true, "
                        + "\"schema\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}}}"));
        assertThat(JsonMatcher.matches(schema.grammar(), "{\"a\":1}")).isTrue();
        assertThat(JsonMatcher.isPrefix(schema.grammar(), "{\"b\"")).isFalse();
        assertThatThrownBy(() -> ResponseFormat.parse(JSON.readTree(
                "{\"type\": \"json_schema\", \"json_schema\": {\"schema\": "
                        + "{\"type\": \"number\", \"multipleOf\": 0}}}")))
                .isInstanceOf(MoeException.class)
                .hasMessageStartingWith("response_format.json_schema.schema:").hasMessageContaining("'multipleOf'");
        assertThatThrownBy(() -> ResponseFormat.parse(JSON.readTree("{\"type\": \"xml\"}")))
                .isInstanceOf(MoeException.class).hasMessageStartingWith("response_format.type:");
        assertThatThrownBy(() -> ResponseFormat.parse(JSON.readTree("{\"type\": \"json_schema\"}")))
                .isInstanceOf(MoeException.class).hasMessageContaining("json_schema.schema");
    }
}
