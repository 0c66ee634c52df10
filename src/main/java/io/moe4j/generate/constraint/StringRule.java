package io.moe4j.generate.constraint;

/**
 * What a JSON string's characters must be beyond JSON's own rules ({@code pattern}, {@code format}, {@code
 * minLength}, {@code maxLength}): an automaton over code points whose states are ints, with the bytes that the
 * shortest way to an accepting state takes, written as a JSON string spells it (the token budget is reckoned in
 * those bytes). States from which no accepting state can be reached are never entered.
 */
interface StringRule {
    /** No way on: {@link #step}'s answer for a refused code point, {@link #distAfter}'s when none is allowed. */
    int DEAD = -1;
    /** {@link #distAfter}'s answer when no code point of the range goes on. */
    int NO_WAY = Integer.MAX_VALUE;

    int start();

    /** The state after code point {@code cp}, or {@link #DEAD}. */
    int step(int state, int cp);

    /** The string may end here. */
    boolean accepts(int state);

    /** Bytes of the shortest JSON string content from this state to an accepting one. */
    int dist(int state);

    /** The least {@link #dist} of the states reached by a code point in [lo, hi]; {@link #NO_WAY} when none. */
    int distAfter(int state, int lo, int hi);

    /**
     * The fewest bytes that spell code point {@code cp} inside a JSON string: itself in UTF-8, or its escape where it
     * must be escaped (a quote, a backslash, control characters).
     */
    static int bytesOf(int cp) {
        if (cp == '"' || cp == '\\' || cp == '\b' || cp == '\f' || cp == '\n' || cp == '\r' || cp == '\t') {
            return 2;
        }
        if (cp < 0x20) {
            return 6;
        }
        return utf8Length(cp);
    }

    /** Bytes of code point {@code cp} in UTF-8. */
    static int utf8Length(int cp) {
        return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    }

    /** The fewest bytes that spell any code point of [lo, hi] inside a JSON string. */
    static int fewestBytes(int lo, int hi) {
        if (lo <= 0x7F && hi >= 0x20) {
            // a printable ASCII character other than a quote or a backslash, if the range holds one
            int from = Math.max(lo, 0x20);
            int to = Math.min(hi, 0x7F);
            for (int c = from; c <= to; c++) {
                if (c != '"' && c != '\\') {
                    return 1;
                }
            }
        }
        int best = Integer.MAX_VALUE;
        for (int c = lo; c <= Math.min(hi, 0x7F); c++) {
            best = Math.min(best, bytesOf(c));
        }
        if (hi >= 0x80) {
            best = Math.min(best, bytesOf(Math.max(lo, 0x80)));
        }
        return best;
    }
}
