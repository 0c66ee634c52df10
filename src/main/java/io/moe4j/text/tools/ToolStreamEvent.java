package io.moe4j.text.tools;

/** What a {@link ToolCallStream} emits as text comes in: content to show, or a whole tool call. */
public sealed interface ToolStreamEvent {

    /** More content text (a {@code delta.content} chunk). */
    record ContentDelta(String text) implements ToolStreamEvent {
    }

    /**
     * A tool call, whole, at position {@code index} among this turn's calls (one {@code delta.tool_calls} chunk
     * with the id, the name and all the arguments; the OpenAI SDKs assemble such a chunk as they do partial ones).
     */
    record ToolCallDelta(int index, ToolCall call) implements ToolStreamEvent {
    }
}
