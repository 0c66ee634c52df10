package io.moe4j.text.tools;

import io.moe4j.MoeException;
import io.moe4j.text.tools.ToolStreamEvent.ContentDelta;
import io.moe4j.text.tools.ToolStreamEvent.ToolCallDelta;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads tool calls out of a model's output text, by the family's own call format (Qwen3 / Hermes
 * {@code <tool_call>} blocks, DeepSeek-V3 tool-call tokens). Malformed or unclosed calls stay in the content as
 * they were written; parsing never fails on model output. Reasoning ({@code <think>...</think>}) is expected to be
 * split off before. gpt-oss's harmony calls are read by the harmony parser, not here.
 */
public final class ToolCallParser {
    private static final List<ToolCallFormat> FORMATS = List.of(new HermesFormat(), new DeepSeekV3Format());

    private final ToolCallFormat format;

    private ToolCallParser(ToolCallFormat format) {
        this.format = format;
    }

    /** The parser for a model family (a name of {@link #families()}, case-insensitive). */
    public static ToolCallParser forFamily(String family) {
        for (ToolCallFormat f : FORMATS) {
            if (f.families().contains(family.toLowerCase(java.util.Locale.ROOT))) {
                return new ToolCallParser(f);
            }
        }
        throw new MoeException("no tool-call parser for model family '" + family + "'; known: " + families());
    }

    public static List<String> families() {
        List<String> all = new ArrayList<>();
        FORMATS.forEach(f -> all.addAll(f.families()));
        return all;
    }

    /** The content and the calls of a whole output, with random call ids. */
    public ParsedOutput parse(String text) {
        return parse(text, ToolCallIds.random());
    }

    public ParsedOutput parse(String text, ToolCallIds ids) {
        ToolCallStream stream = stream(ids);
        List<ToolStreamEvent> events = new ArrayList<>(stream.push(text));
        events.addAll(stream.finish());
        StringBuilder content = new StringBuilder();
        List<ToolCall> calls = new ArrayList<>();
        for (ToolStreamEvent e : events) {
            switch (e) {
                case ContentDelta(String t) -> content.append(t);
                case ToolCallDelta(int index, ToolCall call) -> calls.add(call);
            }
        }
        return new ParsedOutput(content.toString(), calls);
    }

    /** A stream for one output being generated. */
    public ToolCallStream stream(ToolCallIds ids) {
        return new ToolCallStream(format, ids);
    }
}
