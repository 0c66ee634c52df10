package io.moe4j.generate.constraint;

import java.nio.charset.StandardCharsets;

/**
 * Reads a document byte by byte and tells whether it is still a valid prefix of one the grammar allows. One matcher
 * follows one text; it is not thread-safe.
 */
public final class JsonMatcher {
    private JsonState state;

    public JsonMatcher(JsonGrammar grammar) {
        this.state = grammar.start();
    }

    /** Feeds bytes; false (and the matcher unchanged) when they do not continue a valid prefix. */
    public boolean accept(byte[] bytes) {
        JsonState next = state.advance(bytes);
        if (next == null) {
            return false;
        }
        state = next;
        return true;
    }

    public boolean accept(String text) {
        return accept(text.getBytes(StandardCharsets.UTF_8));
    }

    /** The text so far is a whole document the grammar allows. */
    public boolean isComplete() {
        return state.isComplete();
    }

    /** Bytes of the shortest text that would complete the document. */
    public int minBytesToComplete() {
        return state.cost();
    }

    /** True when {@code text} is a valid prefix of an allowed document. */
    public static boolean isPrefix(JsonGrammar grammar, String text) {
        return new JsonMatcher(grammar).accept(text);
    }

    /** True when {@code text} is a whole allowed document. */
    public static boolean matches(JsonGrammar grammar, String text) {
        JsonMatcher m = new JsonMatcher(grammar);
        return m.accept(text) && m.isComplete();
    }

    JsonState state() {
        return state;
    }
}
