package io.moe4j.text.chat.output;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits harmony-format text (gpt-oss) into messages as it streams in, so a caller can show the {@code final}
 * channel as the answer, the {@code analysis} channel as reasoning, and take {@code to=functions.NAME} messages
 * ended by {@code <|call|>} as tool calls.
 *
 * <p>A message is {@code <|start|>HEADER<|message|>CONTENT END}; the header is the role, optionally
 * {@code to=RECIPIENT}, then {@code <|channel|>CHANNEL}, optionally {@code to=RECIPIENT}, and a content type
 * ({@code json} or {@code <|constrain|>json}). END is {@code <|end|>}, {@code <|return|>} or {@code <|call|>}.
 * Text may arrive in pieces of any size, special tokens split across pieces included: a piece that ends in what
 * may be the start of a special token is held back until the next piece tells.
 *
 * <p>{@link #forAssistantReply()} parses what the model generates after a prompt that ends with
 * {@code <|start|>assistant} (the generation prompt of gpt-oss's template): the header is already open with the
 * role {@code assistant}. Text outside any message (which a well-behaved model does not produce) is kept as a
 * message with role {@code assistant} and no channel, never dropped.
 *
 * <p>By default every spelling of a special token in the text is structure. A model's reply can also spell one with
 * ordinary tokens (a document it quotes, text it was asked to repeat), and that text must not open a message or a
 * tool call: after {@link #markersFromTokens()} only markers that a special token produced are structure, as the
 * generating side reports them with each piece ({@link #feed(String, int[])}); any other spelling is content.
 */
public final class HarmonyParser {
    static final String START = "<|start|>";
    static final String MESSAGE = "<|message|>";
    static final String CHANNEL = "<|channel|>";
    static final String CONSTRAIN = "<|constrain|>";
    static final String END = "<|end|>";
    static final String RETURN = "<|return|>";
    static final String CALL = "<|call|>";
    static final String END_OF_TEXT = "<|endoftext|>";
    private static final String[] TOKENS = {START, MESSAGE, CHANNEL, CONSTRAIN, END, RETURN, CALL, END_OF_TEXT};

    private enum State { OUTSIDE, HEADER, CONTENT }

    private final StringBuilder pending = new StringBuilder();
    /** Whether markers are structure only where a special token produced them (see the class comment). */
    private boolean fromTokens;
    /** Characters fed before {@code pending}'s first one. */
    private long consumed;
    /** Characters fed so far. */
    private long fed;
    /** Where in the fed text (character offsets) a special token's text ends, from {@code consumed} on. */
    private final java.util.TreeSet<Long> specialEnds = new java.util.TreeSet<>();
    private final List<HarmonyMessage> messages = new ArrayList<>();
    private State state;
    private String defaultRole;
    private String role;
    private String channel;
    private String recipient;
    private String contentType;
    private final StringBuilder content = new StringBuilder();

    private HarmonyParser(State state, String defaultRole) {
        this.state = state;
        this.defaultRole = defaultRole;
    }

    /** For the model's output after a prompt ending in {@code <|start|>assistant}. */
    public static HarmonyParser forAssistantReply() {
        return new HarmonyParser(State.HEADER, "assistant");
    }

    /** For text that begins at a message boundary, such as a whole rendered conversation. */
    public static HarmonyParser forConversation() {
        return new HarmonyParser(State.OUTSIDE, null);
    }

    /**
     * Reads markers as structure only where a special token produced them: every later piece comes with its special
     * tokens' ends ({@link #feed(String, int[])}; {@link #feed(String)} then means a piece without any). Call before
     * the first piece.
     */
    public HarmonyParser markersFromTokens() {
        if (fed > 0) {
            throw new IllegalStateException("markersFromTokens() must come before the first piece");
        }
        fromTokens = true;
        return this;
    }

    /** Feeds the next piece of text; returns what it completed. */
    public List<HarmonyEvent> feed(String piece) {
        return feed(piece, null);
    }

    /**
     * Feeds the next piece of text; {@code specialEnds} lists the offsets in {@code piece} (0 to its length, in
     * order) where the text of a special token the model generated ends, or is null for none. Read only after
     * {@link #markersFromTokens()}.
     */
    public List<HarmonyEvent> feed(String piece, int[] specialEnds) {
        if (fromTokens && specialEnds != null) {
            for (int end : specialEnds) {
                if (end < 0 || end > piece.length()) {
                    throw new IllegalArgumentException("special token end " + end + " is outside the piece of "
                            + piece.length() + " characters");
                }
                this.specialEnds.add(fed + end);
            }
        }
        fed += piece.length();
        pending.append(piece);
        List<HarmonyEvent> events = new ArrayList<>();
        while (step(events, false)) {
            // each step consumes input or changes state
        }
        return events;
    }

    /** The text has ended: flushes held-back text and reports a message cut off inside (end null). */
    public List<HarmonyEvent> finish() {
        List<HarmonyEvent> events = new ArrayList<>();
        while (step(events, true)) {
            // drain
        }
        if (state == State.CONTENT) {
            endMessage(null, events);
        } else if (state == State.HEADER && !pending.isEmpty()) {
            // A header with no <|message|>: a message with a header and no content.
            openMessage(pending.toString(), events);
            pending.setLength(0);
            endMessage(null, events);
        }
        pending.setLength(0);
        return events;
    }

    /** The messages completed so far, in order. */
    public List<HarmonyMessage> messages() {
        return List.copyOf(messages);
    }

    private boolean step(List<HarmonyEvent> events, boolean atEnd) {
        if (pending.isEmpty()) {
            return false;
        }
        switch (state) {
            case OUTSIDE -> {
                int i = pending.indexOf("<|");
                String tok = i < 0 ? null : tokenAt(i);
                if (i == 0 && tok == null && !atEnd && couldBeToken(0)) {
                    return false;
                }
                if (i < 0 && !atEnd && pending.length() == 1 && pending.charAt(0) == '<') {
                    return false;
                }
                if (i == 0 && tok != null) {
                    consume(tok.length());
                    if (tok.equals(START)) {
                        state = State.HEADER;
                    }
                    // Stray end or header tokens outside a message carry nothing; they are skipped.
                    return true;
                }
                // Text outside a message: keep it as an unframed assistant message.
                role = "assistant";
                channel = null;
                recipient = null;
                contentType = null;
                messageStarted(events);
                state = State.CONTENT;
                return true;
            }
            case HEADER -> {
                int m = marker(MESSAGE);
                int firstEnd = firstMarker(END, RETURN, CALL, START);
                if (m >= 0 && (firstEnd < 0 || m < firstEnd)) {
                    openMessage(pending.substring(0, m), events);
                    consume(m + MESSAGE.length());
                    state = State.CONTENT;
                    return true;
                }
                if (firstEnd >= 0) {
                    // A header ended without content.
                    openMessage(pending.substring(0, firstEnd), events);
                    consume(firstEnd);
                    state = State.CONTENT;
                    return true;
                }
                return false;
            }
            case CONTENT -> {
                int i = pending.indexOf("<|");
                if (i < 0) {
                    // A trailing '<' may be the start of a special token.
                    boolean hold = !atEnd && pending.charAt(pending.length() - 1) == '<';
                    emit(pending.length() - (hold ? 1 : 0), events);
                    return false;
                }
                if (i > 0) {
                    emit(i, events);
                    return true;
                }
                String tok = tokenAt(0);
                if (tok == null) {
                    if (!atEnd && couldBeToken(0)) {
                        return false;
                    }
                    emit(2, events);
                    return true;
                }
                switch (tok) {
                    case END, RETURN, CALL, END_OF_TEXT -> {
                        consume(tok.length());
                        endMessage(tok.equals(END_OF_TEXT) ? null : tok, events);
                        state = State.OUTSIDE;
                    }
                    case START -> {
                        consume(tok.length());
                        endMessage(null, events);
                        state = State.HEADER;
                    }
                    default -> emit(tok.length(), events);
                }
                return true;
            }
            default -> throw new IllegalStateException();
        }
    }

    /** The first place in pending where {@code t} stands as structure, or -1. */
    private int marker(String t) {
        for (int i = pending.indexOf(t); i >= 0; i = pending.indexOf(t, i + 1)) {
            if (isStructure(i, t.length())) {
                return i;
            }
        }
        return -1;
    }

    private int firstMarker(String... markers) {
        int best = -1;
        for (String t : markers) {
            int i = marker(t);
            if (i >= 0 && (best < 0 || i < best)) {
                best = i;
            }
        }
        return best;
    }

    /** Whether the marker of {@code length} characters at pending[i] is structure: always, or where a token made it. */
    private boolean isStructure(int i, int length) {
        return !fromTokens || specialEnds.contains(consumed + i + length);
    }

    private String tokenAt(int i) {
        for (String t : TOKENS) {
            if (pending.length() - i >= t.length() && pending.substring(i, i + t.length()).equals(t)
                    && isStructure(i, t.length())) {
                return t;
            }
        }
        return null;
    }

    /** Drops pending[0, n), which has been read. */
    private void consume(int n) {
        pending.delete(0, n);
        consumed += n;
        specialEnds.headSet(consumed, false).clear();
    }

    /** Whether the rest of the pending text from {@code i} is a proper prefix of some special token. */
    private boolean couldBeToken(int i) {
        String rest = pending.substring(i);
        for (String t : TOKENS) {
            if (t.length() > rest.length() && t.startsWith(rest)) {
                return true;
            }
        }
        return false;
    }

    private void emit(int n, List<HarmonyEvent> events) {
        if (n == 0) {
            return;
        }
        String text = pending.substring(0, n);
        consume(n);
        content.append(text);
        events.add(new HarmonyEvent.ContentDelta(messages.size(), channel, text));
    }

    private void openMessage(String header, List<HarmonyEvent> events) {
        role = defaultRole;
        defaultRole = null;
        channel = null;
        recipient = null;
        contentType = null;
        int c = header.indexOf(CHANNEL);
        String rolePart = c >= 0 ? header.substring(0, c) : header;
        String channelPart = c >= 0 ? header.substring(c + CHANNEL.length()) : "";
        for (String word : rolePart.trim().split("\\s+")) {
            if (word.isEmpty()) {
                continue;
            }
            if (word.startsWith("to=")) {
                recipient = word.substring(3);
            } else if (role == null) {
                role = word;
            }
        }
        boolean first = true;
        for (String word : channelPart.replace(CONSTRAIN, " " + CONSTRAIN + " ").trim().split("\\s+")) {
            if (word.isEmpty() || word.equals(CONSTRAIN)) {
                continue;
            }
            if (word.startsWith("to=")) {
                recipient = word.substring(3);
            } else if (first) {
                channel = word;
            } else {
                contentType = word;
            }
            first = false;
        }
        if (role == null) {
            role = "assistant";
        }
        messageStarted(events);
    }

    private void messageStarted(List<HarmonyEvent> events) {
        content.setLength(0);
        events.add(new HarmonyEvent.MessageStart(messages.size(), role, channel, recipient, contentType));
    }

    private void endMessage(String end, List<HarmonyEvent> events) {
        HarmonyMessage m = new HarmonyMessage(role, channel, recipient, contentType, content.toString(), end);
        events.add(new HarmonyEvent.MessageEnd(messages.size(), m));
        messages.add(m);
        content.setLength(0);
    }
}
