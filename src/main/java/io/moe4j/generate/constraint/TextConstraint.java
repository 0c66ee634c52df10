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
 * <p><b>Budget.</b> As for JSON ({@link JsonConstraint}): a token is allowed only if, after it, the cost of completing
 * the text plus one end token fit in the tokens left. The cost is the fewest tokens where the grammar has them for
 * this vocabulary ({@link TextGrammar#tokenCosts}: exact, for automata without cycles), else the fewest bytes (a
 * byte-level vocabulary spells any text in at most one token a byte); along the best next token either falls by at
 * least one, so the shortest completion stays reachable and every sequence given at least {@link #minTokens()}
 * tokens ends in a complete text. A token after which
 * the text matches fits any budget, even the last token's: the reply may end there by its length.
 */
final class TextConstraint implements AnswerConstraint, TokenTrie.ByteMatcher {
    private static final long DEAD = Utf8Matcher.DEAD;

    private final Utf8Matcher bytes;
    /** Per state reached, the fewest tokens to a match (TextGrammar#tokenCosts); null: reckoned in bytes. */
    private final Map<Long, Integer> tokenCosts;
    private final TokenTrie trie;
    private final TokenVocabulary vocabulary;
    private final int[] endTokens;
    /** Per automaton state, its class for tokens as long as the trie's longest; null with costs in tokens. */
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
        this.bytes = new Utf8Matcher(grammar.automaton());
        this.tokenCosts = grammar.tokenCosts(trie);
        this.classes = tokenCosts == null ? grammar.futureClasses(trie.maxTokenBytes()) : null;
        this.trie = trie;
        this.vocabulary = vocabulary;
        this.endTokens = trie.checkedEndTokens(vocabulary, endTokens, "the text");
        this.state = bytes.start();
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
        // with no room left for an end token (maxCost -1), tokens that complete the text still may come: the reply
        // then ends by its length, complete
        if (classes != null && Utf8Matcher.pending(state) == 0) {
            int[] costs = endCosts.computeIfAbsent(classes[Utf8Matcher.automatonState(state)],
                    k -> trie.endCosts(this, state));
            boolean refusedForCost = false;
            for (int id = 0; id < n; id++) {
                int c = costs[id];
                if (c >= 0) {
                    boolean fits = c <= maxCost || c == 0;
                    mask[id] = fits;
                    refusedForCost |= !fits;
                }
            }
            cutByBudget |= refusedForCost && !complete;
        } else {
            // costs in tokens (an acyclic automaton, each of whose states is met once), or a character under way
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
        return bytes.isComplete(state);
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
        return bytes.step(at, b);
    }

    /** The fewest tokens to a match where the grammar has them for this vocabulary, else the fewest bytes. */
    @Override
    public int cost(long at) {
        Integer tokens = tokenCosts == null ? null : tokenCosts.get(at);
        return tokens != null ? tokens : bytes.cost(at);
    }
}
