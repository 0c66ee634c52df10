package io.moe4j.text.tools;

import java.util.List;

/** A model's turn split into its text for the user and the tool calls it made, in order. */
public record ParsedOutput(String content, List<ToolCall> toolCalls) {

    public ParsedOutput {
        toolCalls = List.copyOf(toolCalls);
    }

    public boolean hasToolCalls() {
        return !toolCalls.isEmpty();
    }
}
