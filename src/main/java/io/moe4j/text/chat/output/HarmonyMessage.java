package io.moe4j.text.chat.output;

/**
 * One message of gpt-oss's harmony format, e.g. {@code <|start|>assistant<|channel|>final<|message|>Hi<|end|>}.
 *
 * @param role        {@code assistant}, {@code user}, {@code system}, {@code developer}, or a tool such as
 *                    {@code functions.get_weather}
 * @param channel     {@code analysis}, {@code commentary}, {@code final}, or null when the header names none
 * @param recipient   the {@code to=} target (e.g. {@code functions.get_weather}), or null
 * @param contentType the content type after the channel (e.g. {@code json}, also written
 *                    {@code <|constrain|>json}), or null
 * @param content     the text between {@code <|message|>} and the end token
 * @param end         the token that ended it ({@code <|end|>}, {@code <|return|>}, {@code <|call|>}), or null when
 *                    the text stopped inside it or the next {@code <|start|>} began without one
 */
public record HarmonyMessage(String role, String channel, String recipient, String contentType, String content,
                             String end) {
    public boolean isFinal() {
        return "final".equals(channel);
    }

    public boolean isAnalysis() {
        return "analysis".equals(channel);
    }

    /** A call to a function tool: addressed to {@code functions.NAME} (and normally ended by {@code <|call|>}). */
    public boolean isToolCall() {
        return recipient != null && recipient.startsWith("functions.") && "assistant".equals(role);
    }

    /** The function's name of a tool call ({@code get_weather} for {@code functions.get_weather}), else null. */
    public String functionName() {
        return isToolCall() ? recipient.substring("functions.".length()) : null;
    }
}
