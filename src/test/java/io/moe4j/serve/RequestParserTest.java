package io.moe4j.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
        assertThat(text.prompts()).singleElement().extracting(CompletionPrompt::text).isEqualTo("hi");
        assertThat(text.maxTokens()).isNull();
        assertThat(text.sampling().temperature()).as("OpenAI's default").isEqualTo(1.0);
        ApiRequest ids = RequestParser.completion(JSON.readTree("{\"model\":\"m\",\"prompt\":[[1,2,3]],\"stop\":\"s\"}"),
                10);
        assertThat(ids.prompts().getFirst().ids()).containsExactly(1, 2, 3);
        assertThat(ids.stops()).containsExactly("s");
        ApiRequest batch = RequestParser.completion(JSON.readTree("{\"model\":\"m\",\"prompt\":[[1,2],[3]]}"), 10);
        assertThat(batch.prompts()).hasSize(2);
        assertThat(batch.prompts().get(1).ids()).containsExactly(3);
        assertThat(RequestParser.completion(JSON.readTree("{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}"), 10)
                .prompts()).extracting(CompletionPrompt::text).containsExactly("a", "b");
        for (String bad : List.of("[\"a\", [1]]", "[[1], \"a\"]", "[[1], []]", "[[1], [99]]")) {
            assertThatThrownBy(() -> RequestParser.completion(JSON.readTree("{\"model\":\"m\",\"prompt\":" + bad
                    + "}"), 10)).as(bad).isInstanceOf(ApiError.class).hasMessageContaining("prompt[1]");
        }
    }

    /**
     * Sampling fields a request leaves out take the served model's defaults (generation_config.json's, as vLLM
     * serves them); fields it sends win, a top_k of -1 being no cut.
     */
    @Test
    void leftOutSamplingFieldsTakeTheModelsDefaults() throws Exception {
        SamplingDefaults qwen = new SamplingDefaults(0.6, 0.95, 20, 0.0);
        ApiRequest left = RequestParser.chat(JSON.readTree("""
                {"model": "m", "messages": [{"role": "user", "content": "hi"}]}"""), qwen);
        assertThat(left.sampling().temperature()).isEqualTo(0.6);
        assertThat(left.sampling().topP()).isEqualTo(0.95);
        assertThat(left.sampling().topK()).isEqualTo(20);
        ApiRequest sent = RequestParser.completion(JSON.readTree("""
                {"model": "m", "prompt": "hi", "temperature": 1.2, "top_p": 1, "top_k": -1, "min_p": 0.05}"""), 10,
                qwen);
        assertThat(sent.sampling().temperature()).isEqualTo(1.2);
        assertThat(sent.sampling().topP()).isEqualTo(1.0);
        assertThat(sent.sampling().topK()).isZero();
        assertThat(sent.sampling().minP()).isEqualTo(0.05);
        ApiRequest openAi = RequestParser.chat(JSON.readTree("""
                {"model": "m", "messages": [{"role": "user", "content": "hi"}]}"""));
        assertThat(openAi.sampling().temperature()).isEqualTo(1.0);
        assertThat(openAi.sampling().topK()).isZero();
        assertThat(openAi.sampling().adjustments().isNone()).isTrue();
        // generation_config's repetition_penalty, as vLLM applies it; a request's own value wins
        SamplingDefaults repeating = new SamplingDefaults(0.7, 0.8, 20, 0.0, 1.05);
        assertThat(RequestParser.chat(JSON.readTree("""
                {"model": "m", "messages": [{"role": "user", "content": "hi"}]}"""), repeating).sampling()
                .adjustments().repetitionPenalty()).isEqualTo(1.05);
        ApiRequest penalized = RequestParser.completion(JSON.readTree("""
                {"model": "m", "prompt": "hi", "repetition_penalty": 1.3, "presence_penalty": 0.5,
                 "frequency_penalty": -0.25, "logit_bias": {"7": -100, " 3": 2.5}}"""), 10, repeating);
        assertThat(penalized.sampling().adjustments()).isEqualTo(new io.moe4j.generate.LogitAdjustments(0.5, -0.25,
                1.3, java.util.Map.of(7, -100f, 3, 2.5f)));
    }

    /** vLLM's skip_special_tokens: true unless a request sends false; anything but a boolean is refused. */
    @Test
    void specialTokensAreSkippedUnlessAskedFor() throws Exception {
        String chat = "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]";
        assertThat(RequestParser.chat(JSON.readTree(chat + "}")).skipSpecialTokens()).isTrue();
        assertThat(RequestParser.chat(JSON.readTree(chat + ", \"skip_special_tokens\": false}")).skipSpecialTokens())
                .isFalse();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> RequestParser.chat(JSON.readTree(chat
                + ", \"skip_special_tokens\": \"no\"}"))).isInstanceOf(ApiError.class)
                .hasMessageContaining("'skip_special_tokens' must be a boolean");
    }
}
