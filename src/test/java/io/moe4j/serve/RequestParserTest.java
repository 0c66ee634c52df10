package io.moe4j.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class RequestParserTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void chatFieldsReachTheRequest() throws Exception {
        ApiRequest r = RequestParser.chat(JSON.readTree("""
                {"model": "m", "messages": [
                   {"role": "system", "content": "be brief"},
                   {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                   {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "f", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "42"}],
                 "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
                 "tool_choice": "auto", "response_format": {"type": "text"},
                 "max_tokens": 9, "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
                 "min_p": 0.05, "seed": 12, "stop": ["x", "y"], "stream": true,
                 "stream_options": {"include_usage": true}, "reasoning_effort": "low",
                 "chat_template_kwargs": {"enable_thinking": false}, "user": "u", "n": 1}
                """));
        assertThat(r.isChat()).isTrue();
        assertThat(r.chat().messages()).extracting(ChatMessage::role)
                .containsExactly("system", "user", "assistant", "tool");
        assertThat(r.chat().messages().get(1).content()).isEqualTo("ab");
        assertThat(r.chat().messages().get(2).content()).isNull();
        assertThat(r.chat().messages().get(2).raw().get("tool_calls").get(0).get("id").asText()).isEqualTo("c1");
        assertThat(r.chat().tools().get(0).at("/function/name").asText()).isEqualTo("f");
        assertThat(r.chat().templateArgs()).containsOnlyKeys("enable_thinking", "reasoning_effort");
        assertThat(r.maxTokens()).as("max_completion_tokens wins over max_tokens").isEqualTo(7);
        assertThat(r.sampling().temperature()).isEqualTo(0.5);
        assertThat(r.sampling().topP()).isEqualTo(0.9);
        assertThat(r.sampling().topK()).isEqualTo(40);
        assertThat(r.sampling().minP()).isEqualTo(0.05);
        assertThat(r.sampling().seed()).isEqualTo(12);
        assertThat(r.stops()).containsExactly("x", "y");
        assertThat(r.stream()).isTrue();
        assertThat(r.includeUsage()).isTrue();
    }

    @Test
    void completionPromptsAsTextOrIds() throws Exception {
        ApiRequest text = RequestParser.completion(JSON.readTree("{\"model\":\"m\",\"prompt\":[\"hi\"]}"), 10);
        assertThat(text.promptText()).isEqualTo("hi");
        assertThat(text.maxTokens()).isNull();
        assertThat(text.sampling().temperature()).as("OpenAI's default").isEqualTo(1.0);
        ApiRequest ids = RequestParser.completion(JSON.readTree("{\"model\":\"m\",\"prompt\":[[1,2,3]],\"stop\":\"s\"}"),
                10);
        assertThat(ids.promptIds()).containsExactly(1, 2, 3);
        assertThat(ids.stops()).containsExactly("s");
    }
}
