package io.moe4j.generate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.moe4j.generate.constraint.ResponseFormat;
import io.moe4j.text.tools.ToolChoice;

import java.util.Map;

/**
 * A chat turn to generate with tools and structured output: the conversation (OpenAI-style message objects), the
 * tools offered (OpenAI's {@code tools} array, or null), how the model may use them, the shape of the answer, the
 * chat template's extra arguments ({@code reasoning_effort}, {@code enable_thinking} ...) and the sampling.
 *
 * <p>{@code tool_choice} required or named makes the answer a call, written as constrained JSON; otherwise a
 * {@code responseFormat} other than text constrains the answer. The family's reasoning before the answer stays free.
 */
public record ChatGeneration(ArrayNode messages, ArrayNode tools, ToolChoice toolChoice, ResponseFormat responseFormat,
                             Map<String, JsonNode> templateArguments, GenerationRequest request) {
    public ChatGeneration {
        toolChoice = toolChoice != null ? toolChoice
                : tools != null && !tools.isEmpty() ? new ToolChoice.Auto() : new ToolChoice.None();
        responseFormat = responseFormat == null ? ResponseFormat.TEXT : responseFormat;
        templateArguments = Map.copyOf(templateArguments == null ? Map.of() : templateArguments);
    }

    /** Free text after {@code messages}, no tools. */
    public static ChatGeneration of(ArrayNode messages, GenerationRequest request) {
        return new ChatGeneration(messages, null, null, null, Map.of(), request);
    }
}
