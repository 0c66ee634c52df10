package io.moe4j.text.chat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An integer beyond 64 bits in a message (a tool call's argument a client sends back) renders exactly, as Python's
 * unbounded ints do; it was a refused prompt, which broke an agent's next turn after a reply held such a number.
 */
class BigIntegerArgumentsTest {
    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3"})
    void aHugeIntegerArgumentRendersAsWritten(String model) throws Exception {
        ArrayNode messages = (ArrayNode) new ObjectMapper().readTree("""
                [{"role": "user", "content": "count"},
                 {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
                   "function": {"name": "count", "arguments": {"x": 77777777777777777777, "y": -44444444444444444444}}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]""");
        String text = ChatTemplate.load(ChatTemplateFixtureTest.fixtures().resolve(model))
                .render(ChatRequest.of(messages, true));
        assertThat(text).contains("77777777777777777777").contains("-44444444444444444444");
    }
}
