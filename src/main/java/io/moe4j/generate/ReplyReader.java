package io.moe4j.generate;

import io.moe4j.MoeException;
import io.moe4j.text.chat.output.HarmonyMessage;
import io.moe4j.text.chat.output.ReplySplitter;
import io.moe4j.text.tools.ToolCall;
import io.moe4j.text.tools.ToolCallIds;
import io.moe4j.text.tools.ToolCallParser;
import io.moe4j.text.tools.ToolCallStream;
import io.moe4j.text.tools.ToolChoiceSchema;
import io.moe4j.text.tools.ToolStreamEvent;

import java.util.ArrayList;
import java.util.List;

/**
 * Reads a chat reply as it is generated into answer, reasoning and tool calls: {@link ReplySplitter} sets the
 * reasoning apart (gpt-oss's analysis channel, Qwen3's {@code <think>} block); tool calls come from harmony messages
 * addressed to {@code functions.NAME}, from the family's call markup ({@link ToolCallParser}), or, when a
 * {@code tool_choice} forced them, from the answer's constrained JSON ({@link ToolChoiceSchema}). Text that only
 * looks like a call stays answer. One reader follows one reply; not thread-safe.
 */
public final class ReplyReader {

    /** A piece of the reply, in the order it was generated. */
    public sealed interface Event {
        record Answer(String text) implements Event { }

        record Reasoning(String text) implements Event { }

        record Call(int index, ToolCall call) implements Event { }
    }

    private final ReplySplitter splitter;
    private final ToolCallStream calls;
    private final boolean callsAsJson;
    private final ToolCallIds ids;
    private final StringBuilder answer = new StringBuilder();
    private final StringBuilder reasoning = new StringBuilder();
    private final StringBuilder jsonCalls = new StringBuilder();
    private final List<ToolCall> toolCalls = new ArrayList<>();
    private int harmonySeen;
    private boolean oneCall;

    /**
     * @param parser      the family's call markup to read out of the answer, or null
     * @param callsAsJson the answer is a JSON array of calls (or one call object) that constrained decoding wrote
     */
    public ReplyReader(String renderedPrompt, ToolCallParser parser, boolean callsAsJson, ToolCallIds ids) {
        this.splitter = ReplySplitter.forPrompt(renderedPrompt);
        this.calls = parser == null ? null : parser.stream(ids);
        this.callsAsJson = callsAsJson;
        this.ids = ids;
    }

    /**
     * Keeps the reply to its first tool call (a request's {@code parallel_tool_calls: false}): later calls are read
     * and dropped, neither streamed nor listed.
     */
    public ReplyReader oneCallOnly() {
        oneCall = true;
        return this;
    }

    /**
     * Reads gpt-oss's harmony markers as structure only where the model generated them as special tokens, which every
     * later {@link #feed(String, int[])} reports; a marker spelled by ordinary tokens (a quoted document, say) stays
     * text and can open no message and no tool call. Call before the first piece.
     */
    public ReplyReader markersFromTokens() {
        splitter.markersFromTokens();
        return this;
    }

    public List<Event> feed(String text) {
        return feed(text, null);
    }

    /**
     * The next piece of the reply, with the offsets in it where the text of a special token the model generated
     * ends (null: none); see {@link #markersFromTokens()}.
     */
    public List<Event> feed(String text, int[] specialEnds) {
        List<Event> out = new ArrayList<>();
        pieces(splitter.feed(text, specialEnds), out);
        harmonyCalls(out);
        return out;
    }

    /** The reply has ended: held-back text, unclosed calls (as answer) and forced calls come out. */
    public List<Event> finish() {
        List<Event> out = new ArrayList<>();
        pieces(splitter.finish(), out);
        harmonyCalls(out);
        if (calls != null) {
            events(calls.finish(), out);
        }
        if (callsAsJson && !jsonCalls.isEmpty()) {
            try {
                for (ToolCall c : ToolChoiceSchema.calls(jsonCalls.toString(), ids)) {
                    call(c, out);
                }
            } catch (MoeException e) {
                // cut short (max tokens) before the calls were complete: what was written stays the answer
                answer(jsonCalls.toString(), out);
            }
        }
        return out;
    }

    public String answer() {
        return answer.toString();
    }

    public String reasoning() {
        return reasoning.toString();
    }

    public List<ToolCall> toolCalls() {
        return List.copyOf(toolCalls);
    }

    private void pieces(List<ReplySplitter.Piece> pieces, List<Event> out) {
        for (ReplySplitter.Piece p : pieces) {
            switch (p.kind()) {
                case REASONING -> {
                    reasoning.append(p.text());
                    out.add(new Event.Reasoning(p.text()));
                }
                case ANSWER -> {
                    if (callsAsJson) {
                        jsonCalls.append(p.text());
                    } else if (calls != null) {
                        events(calls.push(p.text()), out);
                    } else {
                        answer(p.text(), out);
                    }
                }
                case OTHER -> {
                    // harmony tool-call arguments and commentary: calls are read from the finished messages
                }
            }
        }
    }

    private void events(List<ToolStreamEvent> events, List<Event> out) {
        for (ToolStreamEvent e : events) {
            switch (e) {
                case ToolStreamEvent.ContentDelta(String t) -> answer(t, out);
                case ToolStreamEvent.ToolCallDelta(int index, ToolCall c) -> call(c, out);
            }
        }
    }

    private void harmonyCalls(List<Event> out) {
        List<HarmonyMessage> messages = splitter.harmonyMessages();
        for (; harmonySeen < messages.size(); harmonySeen++) {
            HarmonyMessage m = messages.get(harmonySeen);
            if (m.isToolCall()) {
                call(new ToolCall(ids.next(), m.functionName(), m.content().strip()), out);
            }
        }
    }

    private void answer(String text, List<Event> out) {
        if (!text.isEmpty()) {
            answer.append(text);
            out.add(new Event.Answer(text));
        }
    }

    private void call(ToolCall c, List<Event> out) {
        if (oneCall && !toolCalls.isEmpty()) {
            return;
        }
        out.add(new Event.Call(toolCalls.size(), c));
        toolCalls.add(c);
    }
}
