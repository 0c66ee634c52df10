package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.List;

/**
 * What a chat template renders into the prompt: the conversation and, when the client sent them, its tool definitions
 * (the OpenAI {@code tools} array as sent; null when absent). The rendered prompt ends with the opening of the
 * assistant's turn.
 */
public record ChatPrompt(List<ChatMessage> messages, JsonNode tools) {
    public ChatPrompt {
        messages = List.copyOf(messages);
    }
}
