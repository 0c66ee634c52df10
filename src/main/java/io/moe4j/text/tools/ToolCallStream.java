package io.moe4j.text.tools;

import io.moe4j.text.tools.ToolStreamEvent.ContentDelta;
import io.moe4j.text.tools.ToolStreamEvent.ToolCallDelta;
import java.util.ArrayList;
import java.util.List;

/**
 * Splits a model's output into content and tool calls as it is generated. Text that may be the start of a call
 * marker is held back until it is known; a call is emitted whole when its end marker arrives and its body parses;
 * a call whose body does not parse, or that the output never closes, comes out as content, as written.
 *
 * <p>Whitespace next to calls is the template's layout, not content: it is dropped before a call and kept after
 * one only between pieces of content; content has no leading or trailing whitespace. One stream follows one
 * output; not thread-safe.
 */
public final class ToolCallStream {
    private final ToolCallFormat format;
    private final ToolCallIds ids;
    private final StringBuilder pending = new StringBuilder();
    private final StringBuilder heldWhitespace = new StringBuilder();
    private String whitespaceBeforeCall = "";
    private boolean inCall;
    private boolean emittedContent;
    private int calls;
    private List<ToolStreamEvent> out;

    ToolCallStream(ToolCallFormat format, ToolCallIds ids) {
        this.format = format;
        this.ids = ids;
    }

    /** Takes the next piece of generated text; returns what can be emitted now (often nothing). */
    public List<ToolStreamEvent> push(String text) {
        out = new ArrayList<>();
        pending.append(text);
        scan();
        return out;
    }

    /** The output has ended: held-back text and an unclosed call come out as content. */
    public List<ToolStreamEvent> finish() {
        out = new ArrayList<>();
        scan();
        if (inCall) {
            heldWhitespace.append(whitespaceBeforeCall);
            content(format.callStart() + pending);
            inCall = false;
        } else {
            content(pending.toString());
        }
        pending.setLength(0);
        heldWhitespace.setLength(0);
        return out;
    }

    private void scan() {
        while (true) {
            if (inCall) {
                int end = pending.indexOf(format.callEnd());
                int restart = pending.indexOf(format.callStart());
                if (restart >= 0 && (end < 0 || restart < end)) {
                    // a second start before any end: the first one was not a call
                    heldWhitespace.append(whitespaceBeforeCall);
                    content(format.callStart() + pending.substring(0, restart));
                    pending.delete(0, restart + format.callStart().length());
                    whitespaceBeforeCall = takeHeldWhitespace();
                    continue;
                }
                if (end < 0) {
                    return;
                }
                String body = pending.substring(0, end);
                pending.delete(0, end + format.callEnd().length());
                inCall = false;
                ToolCallFormat.Call call = format.parseBody(body);
                if (call != null) {
                    out.add(new ToolCallDelta(calls++, new ToolCall(ids.next(), call.name(), call.arguments())));
                } else {
                    heldWhitespace.append(whitespaceBeforeCall);
                    content(format.callStart() + body + format.callEnd());
                }
                continue;
            }
            int at = -1;
            String marker = null;
            for (String m : markers()) {
                int i = pending.indexOf(m);
                if (i >= 0 && (at < 0 || i < at)) {
                    at = i;
                    marker = m;
                }
            }
            if (marker == null) {
                int keep = heldPrefix();
                content(pending.substring(0, pending.length() - keep));
                pending.delete(0, pending.length() - keep);
                return;
            }
            content(pending.substring(0, at));
            pending.delete(0, at + marker.length());
            String dropped = takeHeldWhitespace();
            if (marker.equals(format.callStart())) {
                inCall = true;
                whitespaceBeforeCall = dropped;
            }
        }
    }

    private List<String> markers() {
        List<String> m = new ArrayList<>(format.wrappers());
        m.add(format.callStart());
        return m;
    }

    /** The length of the longest end of the pending text that could begin a marker. */
    private int heldPrefix() {
        int best = 0;
        int n = pending.length();
        for (String m : markers()) {
            for (int k = Math.min(m.length() - 1, pending.length()); k > best; k--) {
                if (pending.substring(n - k).equals(m.substring(0, k))) {
                    best = k;
                    break;
                }
            }
        }
        return best;
    }

    private String takeHeldWhitespace() {
        String s = heldWhitespace.toString();
        heldWhitespace.setLength(0);
        return s;
    }

    /** Emits text as content, keeping its whitespace ends back until content follows them. */
    private void content(String text) {
        int start = 0;
        while (start < text.length() && Character.isWhitespace(text.charAt(start))) {
            start++;
        }
        if (start == text.length()) {
            heldWhitespace.append(text);
            return;
        }
        int end = text.length();
        while (Character.isWhitespace(text.charAt(end - 1))) {
            end--;
        }
        heldWhitespace.append(text, 0, start);
        String lead = takeHeldWhitespace();
        emit(emittedContent ? lead + text.substring(start, end) : text.substring(start, end));
        emittedContent = true;
        heldWhitespace.append(text, end, text.length());
    }

    private void emit(String text) {
        if (!out.isEmpty() && out.getLast() instanceof ContentDelta(String previous)) {
            out.set(out.size() - 1, new ContentDelta(previous + text));
        } else {
            out.add(new ContentDelta(text));
        }
    }
}
