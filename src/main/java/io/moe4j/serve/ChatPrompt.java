package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.List;
import java.util.Map;

/**
 * What a chat template renders into the prompt: the conversation; when the client sent them, its tool definitions
 * (the OpenAI {@code tools} array as sent; null when absent); and the template variables the request sets (its
 * {@code chat_template_kwargs} object, plus {@code reasoning_effort} when sent), which a template may read or ignore.
 * The rendered prompt ends with the opening of the assistant's turn.
 */
public record ChatPrompt(List<ChatMessage> messages, JsonNode tools, Map<String, JsonNode> templateArgs) {
    public ChatPrompt {
        messages = List.copyOf(messages);
        templateArgs = Map.copyOf(templateArgs);
    }

    public ChatPrompt(List<ChatMessage> messages, JsonNode tools) {
        this(messages, tools, Map.of());
    }
}
