package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One message of an OpenAI {@code messages} array.
 *
 * @param role    system, developer, user, assistant or tool
 * @param content the text (content parts joined), or null when the message has none (an assistant turn that only
 *                calls tools)
 * @param raw     the message object as sent, for what a chat template may read beyond role and content
 *                ({@code tool_calls}, {@code tool_call_id}, {@code name}, {@code reasoning_content})
 */
public record ChatMessage(String role, String content, JsonNode raw) {
}
