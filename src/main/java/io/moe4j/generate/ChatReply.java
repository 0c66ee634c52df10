package io.moe4j.generate;

import io.moe4j.text.tools.ToolCall;

import java.util.List;

/**
 * A generated chat turn read apart: the answer, the reasoning before it (gpt-oss's analysis channel, Qwen3's
 * {@code <think>} block; empty when none), the tool calls it made, and the raw generation (all text, tokens, times).
 */
public record ChatReply(String answer, String reasoning, List<ToolCall> toolCalls, GenerationResult generation) {
    public ChatReply {
        toolCalls = List.copyOf(toolCalls);
    }
}
