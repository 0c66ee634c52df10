package io.moe4j.text.chat.output;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a Qwen3-style reply {@code <think>\nREASONING\n</think>\n\nANSWER} into reasoning and answer as it streams
 * in, the way Qwen3's own chat template reads a reply back: the reasoning is what stands between {@code <think>}
 * and {@code </think>} without leading and trailing newlines, the answer what follows {@code </think>} without
 * leading newlines. A reply that does not open with {@code <think>} (after optional whitespace) is all answer.
 * Newlines that might still turn out to be trimmed are held back until the next piece tells; so are pieces that
 * end in what may be the start of a tag.
 *
 * <p>A reply cut off inside the reasoning keeps what came as reasoning. When the prompt itself already opened the
 * reasoning (templates that end the generation prompt with {@code <think>\n}), use {@link #startingInside()}.
 */
public final class ThinkSplitter {
    static final String OPEN = "<think>";
    static final String CLOSE = "</think>";

    /** A piece of the reply: reasoning or answer text. */
    public record Piece(boolean reasoning, String text) { }

    private enum State { START, REASONING, ANSWER }

    private final StringBuilder pending = new StringBuilder();
    private final StringBuilder reasoning = new StringBuilder();
    private final StringBuilder answer = new StringBuilder();
    private State state;
    private boolean trimLeadingNewlines;

    private ThinkSplitter(State state) {
        this.state = state;
        this.trimLeadingNewlines = state == State.REASONING;
    }

    /** For a reply that may open with {@code <think>}. */
    public static ThinkSplitter startingOutside() {
        return new ThinkSplitter(State.START);
    }

    /** For a reply whose {@code <think>} was already in the prompt. */
    public static ThinkSplitter startingInside() {
        return new ThinkSplitter(State.REASONING);
    }

    public List<Piece> feed(String text) {
        pending.append(text);
        List<Piece> out = new ArrayList<>();
        while (step(out, false)) {
            // consume
        }
        return out;
    }

    public List<Piece> finish() {
        List<Piece> out = new ArrayList<>();
        while (step(out, true)) {
            // drain
        }
        if (!pending.isEmpty()) {
            if (state == State.START) {
                state = State.ANSWER;
            }
            // Held-back newlines at the end of a cut-off reasoning stay trimmed, as the template would trim them.
            if (state == State.ANSWER && !(trimLeadingNewlines && isNewlines(pending))) {
                emit(pending.length(), out);
            }
            pending.setLength(0);
        }
        return out;
    }

    /** All reasoning so far. */
    public String reasoning() {
        return reasoning.toString();
    }

    /** All answer text so far. */
    public String answer() {
        return answer.toString();
    }

    private boolean step(List<Piece> out, boolean atEnd) {
        if (pending.isEmpty()) {
            return false;
        }
        switch (state) {
            case START -> {
                int i = 0;
                while (i < pending.length() && Character.isWhitespace(pending.charAt(i))) {
                    i++;
                }
                String rest = pending.substring(i);
                if (rest.startsWith(OPEN)) {
                    pending.delete(0, i + OPEN.length());
                    state = State.REASONING;
                    trimLeadingNewlines = true;
                    return true;
                }
                if (!atEnd && OPEN.startsWith(rest)) {
                    return false;
                }
                state = State.ANSWER;
                return true;
            }
            case REASONING -> {
                if (trimLeadingNewlines) {
                    trimNewlines();
                    if (pending.isEmpty()) {
                        return false;
                    }
                    trimLeadingNewlines = false;
                }
                int close = pending.indexOf(CLOSE);
                if (close >= 0) {
                    int end = close;
                    while (end > 0 && pending.charAt(end - 1) == '\n') {
                        end--;
                    }
                    emit(end, out);
                    pending.delete(0, close - end + CLOSE.length());
                    state = State.ANSWER;
                    trimLeadingNewlines = true;
                    return true;
                }
                // Hold back a possible start of </think> and the newlines before it.
                int keep = atEnd ? lengthWithoutTrailingNewlines() : safeLength();
                if (keep > 0) {
                    emit(keep, out);
                }
                return false;
            }
            case ANSWER -> {
                if (trimLeadingNewlines) {
                    trimNewlines();
                    if (pending.isEmpty()) {
                        return false;
                    }
                    trimLeadingNewlines = false;
                }
                emit(pending.length(), out);
                return false;
            }
            default -> throw new IllegalStateException();
        }
    }

    /** How much of the pending reasoning can be emitted: all but trailing newlines and a partial {@code </think>}. */
    private int safeLength() {
        int n = pending.length();
        for (int k = Math.min(CLOSE.length() - 1, n); k > 0; k--) {
            if (CLOSE.startsWith(pending.substring(n - k))) {
                n -= k;
                break;
            }
        }
        while (n > 0 && pending.charAt(n - 1) == '\n') {
            n--;
        }
        return n;
    }

    private int lengthWithoutTrailingNewlines() {
        int n = pending.length();
        while (n > 0 && pending.charAt(n - 1) == '\n') {
            n--;
        }
        return n;
    }

    private void trimNewlines() {
        int i = 0;
        while (i < pending.length() && pending.charAt(i) == '\n') {
            i++;
        }
        pending.delete(0, i);
    }

    private static boolean isNewlines(CharSequence s) {
        return s.chars().allMatch(c -> c == '\n');
    }

    private void emit(int n, List<Piece> out) {
        if (n <= 0) {
            return;
        }
        String text = pending.substring(0, n);
        pending.delete(0, n);
        boolean isReasoning = state == State.REASONING;
        (isReasoning ? reasoning : answer).append(text);
        out.add(new Piece(isReasoning, text));
    }
}
