package io.moe4j.generate.constraint;

import io.moe4j.MoeException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Keeps one sequence's text to a {@link TextGrammar}. Tokens are byte strings that may end inside a UTF-8
 * character, so the state is the automaton's state plus the character under way: its continuation bytes still to
 * come, its length and the bits so far, packed in a {@code long} ({@link #DEAD} for none) so that the mask's trie
 * walk allocates nothing. A byte that begins or continues a character is refused when no character it can be part
 * of leads on (an invalid or overlong sequence, a surrogate, or one the expression does not allow there).
 *
 * <p><b>Budget.</b> As for JSON ({@link JsonConstraint}): a token is allowed only if, after it, the fewest bytes that
 * complete the text plus one end token fit in the tokens left; a byte-level vocabulary spells any text in at most one
 * token a byte, and along the best next token that count falls by at least one, so the shortest completion stays
 * reachable and every sequence given at least {@link #minTokens()} tokens ends in a complete text.
 */
final class TextConstraint implements AnswerConstraint, TokenTrie.ByteMatcher {
    private static final long DEAD = -1L;
    /** The smallest and largest code points of a UTF-8 sequence of 2, 3 and 4 bytes (index: length). */
    private static final int[] LEAST = {0, 0, 0x80, 0x800, 0x10000};
    private static final int[] MOST = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

    private final StringAutomaton automaton;
    private final TokenTrie trie;
    private final TokenVocabulary vocabulary;
    private final int[] endTokens;
    /** Per automaton state, its class for tokens as long as the trie's longest. */
    private final int[] classes;
    private long state;
    private boolean cutByBudget;
    private final boolean[] cut = new boolean[1];
    /**
     * For the last few classes of automaton states masked between characters ({@link TextGrammar#futureClasses}:
     * states from which every token goes alike), each token's cost after it (-1: refused): 800 KB a class on a 200k
     * vocabulary, so only {@value #CACHED_STATES} are kept. Free text (a repeat of a wide class, counted or not) stays
     * in one class for many tokens, and a walk of the whole trie from it takes 10-20 ms on a Zen 3 core for gpt-oss's
     * vocabulary; read from here, its mask is one pass over the ids.
     */
    private final Map<Integer, int[]> endCosts = new LinkedHashMap<>(8, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Integer, int[]> eldest) {
            return size() > CACHED_STATES;
        }
    };
    private static final int CACHED_STATES = 4;

    TextConstraint(TextGrammar grammar, TokenTrie trie, TokenVocabulary vocabulary, int... endTokens) {
        if (trie.vocabularySize() != vocabulary.size()) {
            throw new MoeException("token trie built for " + trie.vocabularySize() + " tokens, vocabulary has "
                    + vocabulary.size());
        }
        if (endTokens.length == 0) {
            throw new MoeException("a text constraint needs the end-of-sequence token id(s) that end the text");
        }
        for (int id : endTokens) {
            if (id < 0 || id >= vocabulary.size()) {
                throw new MoeException("end token id " + id + " outside the vocabulary of " + vocabulary.size());
            }
        }
        this.automaton = grammar.automaton();
        this.classes = grammar.futureClasses(trie.maxTokenBytes());
        this.trie = trie;
        this.vocabulary = vocabulary;
        this.endTokens = endTokens.clone();
        this.state = automaton.start();
    }

    @Override
    public int minTokens() {
        return cost(state) + 1;
    }

    @Override
    public void fillAllowed(boolean[] mask, int remaining) {
        int n = vocabulary.size();
        if (mask.length < n) {
            throw new IllegalArgumentException("mask has " + mask.length + " entries, vocabulary " + n);
        }
        boolean complete = isComplete();
        int cost = cost(state);
        if (remaining < 1 || (!complete && cost + 1 > remaining)) {
            throw new MoeException("token budget of " + remaining + " cannot finish the text the expression asks "
                    + "for: it needs at least " + (complete ? 1 : cost + 1) + " more tokens");
        }
        Arrays.fill(mask, false);
        // after this token: its completion and one end token must fit in remaining - 1
        int maxCost = remaining - 2;
        if (maxCost >= 0 && pending(state) == 0) {
            int[] costs = endCosts.computeIfAbsent(classes[automatonState(state)],
                    k -> trie.endCosts(this, state));
            boolean refusedForCost = false;
            for (int id = 0; id < n; id++) {
                int c = costs[id];
                if (c >= 0) {
                    boolean fits = c <= maxCost;
                    mask[id] = fits;
                    refusedForCost |= !fits;
                }
            }
            cutByBudget |= refusedForCost && !complete;
        } else if (maxCost >= 0) {
            cut[0] = false;
            trie.markBytes(this, state, maxCost, mask, cut);
            cutByBudget |= cut[0] && !complete;
        }
        for (int id : endTokens) {
            mask[id] = complete;
        }
    }

    @Override
    public void accept(int id) {
        for (int end : endTokens) {
            if (id == end) {
                if (!isComplete()) {
                    throw new MoeException("end token " + id + " before the text matches the expression");
                }
                return;
            }
        }
        if (vocabulary.isSpecial(id)) {
            throw new MoeException("special token " + id + " inside a constrained text");
        }
        long next = state;
        for (byte b : vocabulary.bytes(id)) {
            next = step(next, b & 0xFF);
            if (next == DEAD) {
                throw new MoeException("token " + id + " does not continue a text the expression matches");
            }
        }
        state = next;
    }

    @Override
    public boolean isComplete() {
        return pending(state) == 0 && automaton.accepts(automatonState(state));
    }

    @Override
    public boolean cutByBudget() {
        return cutByBudget;
    }

    /** The packed state (automaton state and the character under way), for the trie walk and tests. */
    long state() {
        return state;
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

    private static int automatonState(long at) {
        return (int) at;
    }

    private static int pending(long at) {
        return (int) (at >>> 32) & 3;
    }

    private static int length(long at) {
        return (int) (at >>> 34) & 7;
    }

    private static int bits(long at) {
        return (int) (at >>> 37);
    }
}
