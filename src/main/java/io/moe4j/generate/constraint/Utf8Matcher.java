package io.moe4j.generate.constraint;

/**
 * Raw UTF-8 bytes through a {@link StringAutomaton} over code points: a state is the automaton's state plus the
 * character under way (its continuation bytes still to come, its length, the bits so far), packed in a non-negative
 * {@code long}; {@link #DEAD} for a byte refused. A byte that begins or continues a character is refused when no
 * character it can be part of leads on (an invalid or overlong sequence, a surrogate, a code point past U+10FFFF, or
 * one the automaton does not take there). Costs are the fewest bytes to a match. Immutable.
 */
final class Utf8Matcher implements TokenTrie.ByteMatcher {
    static final long DEAD = -1L;
    /** The smallest and largest code points of a UTF-8 sequence of 1, 2, 3 and 4 bytes (index: length). */
    private static final int[] LEAST = {0, 0, 0x80, 0x800, 0x10000};
    private static final int[] MOST = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

    private final StringAutomaton automaton;

    Utf8Matcher(StringAutomaton automaton) {
        this.automaton = automaton;
    }

    long start() {
        return automaton.start();
    }

    /** The text so far matches: no character under way, and the automaton accepts. */
    boolean isComplete(long at) {
        return pending(at) == 0 && automaton.accepts(automatonState(at));
    }

    @Override
    public long step(long at, int b) {
        int s = automatonState(at);
        int pending = pending(at);
        int length = length(at);
        int bits = bits(at);
        if (pending == 0) {
            if (b < 0x80) {
                return enter(s, b);
            }
            if (b >= 0xC2 && b <= 0xDF) {
                length = 2;
                bits = b & 0x1F;
            } else if (b >= 0xE0 && b <= 0xEF) {
                length = 3;
                bits = b & 0x0F;
            } else if (b >= 0xF0 && b <= 0xF4) {
                length = 4;
                bits = b & 0x07;
            } else {
                return DEAD; // a continuation byte, or a lead byte UTF-8 does not use
            }
            pending = length - 1;
        } else {
            if ((b & 0xC0) != 0x80) {
                return DEAD;
            }
            bits = bits << 6 | (b & 0x3F);
            pending--;
            if (pending == 0) {
                boolean valid = bits >= LEAST[length] && bits <= MOST[length]
                        && (bits < Character.MIN_SURROGATE || bits > Character.MAX_SURROGATE);
                return valid ? enter(s, bits) : DEAD;
            }
        }
        return reach(s, pending, length, bits) == StringRule.NO_WAY ? DEAD : pack(s, pending, length, bits);
    }

    @Override
    public int cost(long at) {
        int pending = pending(at);
        int s = automatonState(at);
        return pending == 0 ? automaton.dist(s) : pending + reach(s, pending, length(at), bits(at));
    }

    /** The state after a whole code point, or DEAD. */
    private long enter(int s, int cp) {
        int t = automaton.step(s, cp);
        return t == StringRule.DEAD ? DEAD : t;
    }

    /**
     * The fewest bytes from the states that the characters beginning with these bits reach, or NO_WAY when none of
     * them is valid UTF-8 the automaton takes here.
     */
    private int reach(int s, int pending, int length, int bits) {
        int lo = Math.max(bits << (6 * pending), LEAST[length]);
        int hi = Math.min(bits << (6 * pending) | ((1 << (6 * pending)) - 1), MOST[length]);
        if (lo > hi) {
            return StringRule.NO_WAY;
        }
        int best = StringRule.NO_WAY;
        if (lo < Character.MIN_SURROGATE) {
            best = automaton.distAfter(s, lo, Math.min(hi, Character.MIN_SURROGATE - 1));
        }
        if (hi > Character.MAX_SURROGATE) {
            best = Math.min(best, automaton.distAfter(s, Math.max(lo, Character.MAX_SURROGATE + 1), hi));
        }
        return best;
    }

    private static long pack(int s, int pending, int length, int bits) {
        return (s & 0xFFFF_FFFFL) | (long) pending << 32 | (long) length << 34 | (long) bits << 37;
    }

    static int automatonState(long at) {
        return (int) at;
    }

    static int pending(long at) {
        return (int) (at >>> 32) & 3;
    }

    private static int length(long at) {
        return (int) (at >>> 34) & 7;
    }

    private static int bits(long at) {
        return (int) (at >>> 37);
    }
}
