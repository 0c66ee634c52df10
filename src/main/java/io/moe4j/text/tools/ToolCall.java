package io.moe4j.text.tools;

/**
 * A function call the model made: an id for the API ({@code tool_calls[].id}), the function's name and its
 * arguments as the JSON text the model wrote (an object; OpenAI's {@code function.arguments} string).
 */
public record ToolCall(String id, String name, String arguments) {
}
