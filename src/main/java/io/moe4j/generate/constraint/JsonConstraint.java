package io.moe4j.generate.constraint;

import io.moe4j.MoeException;
import java.util.Arrays;

/**
 * Constrains one generated sequence to the documents of a {@link JsonGrammar}: before each step {@link #fillAllowed}
 * gives the tokens that keep the text a valid prefix, after it {@link #accept} takes the token drawn. End-of-sequence
 * tokens are allowed exactly when the text is a complete document.
 *
 * <p><b>Budget.</b> The constraint is told how many tokens the sequence may still produce and keeps a completion
 * within it: a token is allowed only if, after it, the shortest completion in bytes plus one end-of-sequence token
 * fits in the tokens left. The shortest completion is reckoned in bytes, or, for a grammar made with
 * {@link JsonGrammar#of(com.fasterxml.jackson.databind.JsonNode, TokenTrie)}, with its fixed pieces (keys, enum values)
 * in the fewest tokens that spell them. Either bounds tokens from above (a byte-level vocabulary has a token for
 * every byte) and falls by at least one along the best next token, so the shortest completion always remains
 * reachable: far from the limit nothing changes; near it, only tokens that
 * move toward the end (closing strings, skipping optional properties, ending arrays) are left. A token after which
 * the document is complete fits any budget, even the last token's (the reply may end there by its length, as an
 * unconstrained one does). This only narrows the language, and with a budget at least {@link #minTokens()} every
 * sequence ends in a complete document.
 *
 * <p>Whitespace is bounded by the grammar ({@link JsonGrammar#maxWhitespace()} bytes a gap, none after the value),
 * so a model cannot loop on blanks. One instance follows one sequence and is not thread-safe.
 */
public final class JsonConstraint implements AnswerConstraint {
    private final TokenTrie trie;
    private final TokenVocabulary vocabulary;
    private final int[] endTokens;
    private JsonState state;
    private int lastVisited;
    /** Whether the budget has left out a token that would have continued an unfinished document. */
    private boolean cutByBudget;
    /** The trie walk's flag of such a token, reset for each mask (one array for every step, not one a step). */
    private final boolean[] cut = new boolean[1];
    /**
     * For the last few rule-string states masked, each plain token's end state ({@link TokenTrie#plainEnds}): 800 KB
     * a state on a 200k vocabulary, so only {@value #CACHED_STATES} are kept.
     */
    private final java.util.Map<RuleState, int[]> plainEnds = new java.util.LinkedHashMap<>(8, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(java.util.Map.Entry<RuleState, int[]> eldest) {
            return size() > CACHED_STATES;
        }
    };
    private static final int CACHED_STATES = 4;

    /**
     * @param endTokens the end-of-sequence ids (eos, end of turn) that may end the document; special tokens
     */
    public JsonConstraint(JsonGrammar grammar, TokenTrie trie, TokenVocabulary vocabulary, int... endTokens) {
        this.trie = trie;
        this.vocabulary = vocabulary;
        this.endTokens = trie.checkedEndTokens(vocabulary, endTokens, "a document");
        this.state = grammar.start();
    }

    /** The fewest tokens a sequence needs for the shortest document and its end token. */
    @Override
    public int minTokens() {
        return state.cost() + 1;
    }

    /**
     * Sets {@code mask[id]} to whether token id may come next when {@code remaining} tokens, this one included, may
     * still be produced. The mask may be longer than the vocabulary (a model's padded vocabulary): ids past it are
     * refused.
     *
     * @throws MoeException when {@code remaining} cannot hold even the shortest completion
     */
    @Override
    public void fillAllowed(boolean[] mask, int remaining) {
        int n = vocabulary.size();
        if (mask.length < n) {
            throw new IllegalArgumentException("mask has " + mask.length + " entries, vocabulary " + n);
        }
        boolean complete = state.isComplete();
        if (remaining < 1 || (!complete && state.cost() + 1 > remaining)) {
            throw new MoeException("token budget of " + remaining + " cannot finish the JSON document: it needs at "
                    + "least " + (complete ? 1 : state.cost() + 1) + " more tokens");
        }
        // After this token: its completion and one end token must fit in remaining - 1.
        int maxCost = remaining - 2;
        // Inside a string, plain tokens keep the state and so its cost: all allowed or all refused, and the walk
        // leaves their subtrees alone either way.
        boolean skipPlain = state.isPlainString();
        RuleStringFrame rule = state.ruleStringBetweenCharacters();
        if (skipPlain && state.cost() <= maxCost) {
            System.arraycopy(trie.plainTokens(), 0, mask, 0, n);
        } else if (rule != null) {
            // The plain tokens through the string's rule with plain ints, not a frame a byte: the walk below then
            // only enters subtrees that hold other tokens.
            Arrays.fill(mask, 0, n, false);
            cutByBudget |= markPlain(rule, maxCost - state.costBelowTop(), mask);
            skipPlain = true;
        } else {
            Arrays.fill(mask, 0, n, false);
            // plain string content refused for its cost: the string is being closed early
            cutByBudget |= skipPlain;
        }
        Arrays.fill(mask, n, mask.length, false);
        cut[0] = false;
        // with no room left for an end token (maxCost -1), tokens that complete the document still may come: the
        // reply then ends by its length, complete
        lastVisited = trie.mark(state, maxCost, skipPlain, mask, cut);
        // a complete document's further tokens (white space) are no content of it
        cutByBudget |= cut[0] && !complete;
        for (int id : endTokens) {
            mask[id] = complete;
        }
    }

    /**
     * Whether the token budget has shaped the document: a token that would have continued it while unfinished was
     * left out for its cost (a string closed, a number or array ended early), so the reply is complete JSON but
     * not the one the model was writing. A reply so ended finishes for its length, not as a stop.
     */
    @Override
    public boolean cutByBudget() {
        return cutByBudget;
    }

    /**
     * Marks the plain tokens that keep the rule string alive and its closing within {@code maxTopCost} bytes;
     * returns whether one was left out for its cost alone.
     */
    private boolean markPlain(RuleStringFrame frame, int maxTopCost, boolean[] mask) {
        StringRule rule = frame.rule();
        if (rule instanceof LengthRule length) {
            return markPlainByLength(length, frame.state(), maxTopCost, mask);
        }
        if (rule instanceof MaxLengthRule bounded) {
            return markPlainWithin(bounded, frame.state(), maxTopCost, mask);
        }
        // A string often stays in a state for many tokens (the free text of an unanchored pattern): the walk's
        // answer for a state is kept for the next masks.
        int[] ends = plainEnds.computeIfAbsent(new RuleState(rule, frame.state()),
                k -> trie.plainEnds(k.rule(), k.state()));
        boolean cut = false;
        for (int id = 0, n = ends.length; id < n; id++) {
            int s = ends[id];
            if (s != StringRule.DEAD) {
                boolean fits = rule.dist(s) + 1 <= maxTopCost;
                mask[id] = fits;
                cut |= !fits;
            }
        }
        return cut;
    }

    /** {@link #markPlain} for lengths alone: only the count of a token's characters matters, so no walk. */
    private boolean markPlainByLength(LengthRule rule, int length, int maxTopCost, boolean[] mask) {
        int[] chars = trie.plainLengths();
        boolean cut = false;
        for (int id = 0, n = chars.length; id < n; id++) {
            if (chars[id] < 0) {
                continue;
            }
            int s = rule.after(length, chars[id]);
            boolean fits = s != StringRule.DEAD && rule.dist(s) + 1 <= maxTopCost;
            mask[id] = fits;
            cut |= s != StringRule.DEAD && !fits;
        }
        return cut;
    }

    /**
     * {@link #markPlain} for a pattern with a maximum length: the automaton's end states without the bound (kept for
     * its state as for any rule), then each token's characters counted against the bound.
     */
    private boolean markPlainWithin(MaxLengthRule rule, int state, int maxTopCost, boolean[] mask) {
        StringAutomaton inner = rule.inner();
        int at = rule.innerState(state);
        int length = rule.length(state);
        int[] ends = plainEnds.computeIfAbsent(new RuleState(inner, at), k -> trie.plainEnds(k.rule(), k.state()));
        int[] chars = trie.plainLengths();
        boolean cut = false;
        for (int id = 0, n = ends.length; id < n; id++) {
            int s = ends[id];
            if (s != StringRule.DEAD && rule.fits(s, length + chars[id])) {
                // every character on the way fits too: the end's completion is within the bound from each of them
                boolean fits = rule.cost(s, length + chars[id]) + 1 <= maxTopCost;
                mask[id] = fits;
                cut |= !fits;
            }
        }
        return cut;
    }

    private record RuleState(StringRule rule, int state) {
    }

    /** Advances past token {@code id}; fails when the token does not continue a valid prefix. */
    @Override
    public void accept(int id) {
        for (int end : endTokens) {
            if (id == end) {
                if (!state.isComplete()) {
                    throw new MoeException("end token " + id + " before the JSON document is complete");
                }
                return;
            }
        }
        if (vocabulary.isSpecial(id)) {
            throw new MoeException("special token " + id + " inside a JSON document");
        }
        JsonState next = state.advance(vocabulary.bytes(id));
        if (next == null) {
            throw new MoeException("token " + id + " does not continue the JSON document");
        }
        state = next;
    }

    /** The text so far is a complete document (an end token may come). */
    @Override
    public boolean isComplete() {
        return state.isComplete();
    }

    /** Trie nodes the last {@link #fillAllowed} visited: what a mask cost, for measurements. */
    public int lastVisitedNodes() {
        return lastVisited;
    }

    /** Bytes of the shortest text that completes the document. */
    public int minBytesToComplete() {
        return state.cost();
    }
}
