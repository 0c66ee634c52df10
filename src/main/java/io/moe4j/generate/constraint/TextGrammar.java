package io.moe4j.generate.constraint;

import io.moe4j.MoeException;
import io.moe4j.generate.constraint.SchemaRegex.Chars;
import io.moe4j.generate.constraint.SchemaRegex.Concat;
import io.moe4j.generate.constraint.SchemaRegex.Node;
import io.moe4j.generate.constraint.StringAutomaton.Spelling;
import io.moe4j.generate.constraint.StringAutomaton.WorkBudget;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The texts a whole answer may be: those a regular expression matches from its first character to its last (vLLM's
 * {@code guided_regex}), or one of a list of strings ({@code guided_choice}). The expression is ECMA-262's regular
 * subset as JSON Schema's {@code pattern} reads it ({@link SchemaRegex}; what it refuses is named), made a
 * deterministic automaton over code points ({@link StringAutomaton}) whose distances count raw UTF-8 bytes.
 * Immutable; compile once per request.
 */
public final class TextGrammar implements AnswerGrammar {
    /** The most strings a choice may list. */
    public static final int MAX_CHOICES = 1024;
    /** The most characters of one choice. */
    public static final int MAX_CHOICE_LENGTH = 1024;

    private final StringAutomaton automaton;
    private int[] futureClasses;
    private int futureDepth;
    private TokenTrie tokenCostTrie;
    private Map<Long, Integer> tokenCosts;
    /** The longest text (in UTF-8 bytes, four a code point) whose costs are counted in tokens. */
    static final int MAX_TOKEN_COST_BYTES = 4096;
    /** The most code points one state may take for a count in tokens to be tried. */
    static final long MAX_TOKEN_COST_WIDTH = 1024;
    /** The most trie nodes the walks of a count in tokens may visit, all states together. */
    static final long MAX_TOKEN_COST_NODES = 1_000_000L;

    private TextGrammar(StringAutomaton automaton) {
        this.automaton = automaton;
    }

    /**
     * The texts {@code pattern} matches as a whole.
     *
     * @param field the request field holding the pattern, named by messages
     * @throws MoeException naming the field and what in the pattern is malformed, unsupported or too large
     */
    public static TextGrammar regex(String pattern, String field) {
        Node expression = SchemaRegex.parseWhole(pattern, field);
        return new TextGrammar(StringAutomaton.of(List.of(expression), List.of(), 0, -1, "'" + field + "'",
                new WorkBudget(Spelling.RAW_TEXT)));
    }

    /**
     * Exactly one of {@code choices}, character for character.
     *
     * @param field the request field holding the list, named by messages
     */
    public static TextGrammar choice(List<String> choices, String field) {
        if (choices.isEmpty() || choices.size() > MAX_CHOICES) {
            throw new MoeException("'" + field + "' must list 1 to " + MAX_CHOICES + " strings, got "
                    + choices.size());
        }
        PrefixTree tree = new PrefixTree();
        for (int i = 0; i < choices.size(); i++) {
            int[] cps = choices.get(i).codePoints().toArray();
            if (cps.length > MAX_CHOICE_LENGTH) {
                // the prefix tree's expression nests a level where a choice ends inside another
                throw new MoeException("'" + field + "[" + i + "]' has " + cps.length + " characters; at most "
                        + MAX_CHOICE_LENGTH + " are served");
            }
            for (int cp : cps) {
                if (cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE) {
                    throw new MoeException("'" + field + "[" + i + "]' holds a lone UTF-16 surrogate (U+"
                            + Integer.toHexString(cp).toUpperCase() + "), which no text can spell");
                }
            }
            tree.add(cps);
        }
        return new TextGrammar(StringAutomaton.of(List.of(tree.expression()), List.of(), 0, -1, "'" + field + "'",
                new WorkBudget(Spelling.RAW_TEXT)));
    }

    /**
     * The choices as a tree of their common prefixes, so that the automaton takes a state a distinct prefix, not a
     * state a character of every choice (1,024 choices of 19 characters sharing "option-number-" stay small).
     */
    private static final class PrefixTree {
        private final java.util.TreeMap<Integer, PrefixTree> children = new java.util.TreeMap<>();
        private boolean ends;

        void add(int[] cps) {
            PrefixTree at = this;
            for (int cp : cps) {
                at = at.children.computeIfAbsent(cp, k -> new PrefixTree());
            }
            at.ends = true;
        }

        /** The strings below this node as an expression: each child's character then its own, or the end here. */
        Node expression() {
            List<Node> alternatives = new ArrayList<>();
            if (ends) {
                alternatives.add(new Concat(List.of()));
            }
            // a chain of single children is one concatenation, so long choices do not nest deeply
            for (var e : children.entrySet()) {
                List<Node> chain = new ArrayList<>();
                chain.add(new Chars(new int[] {e.getKey(), e.getKey()}));
                PrefixTree t = e.getValue();
                while (!t.ends && t.children.size() == 1) {
                    var only = t.children.firstEntry();
                    chain.add(new Chars(new int[] {only.getKey(), only.getKey()}));
                    t = only.getValue();
                }
                if (t.ends || !t.children.isEmpty()) {
                    Node rest = t.expression();
                    if (!(rest instanceof Concat c && c.parts().isEmpty())) {
                        chain.add(rest);
                    }
                }
                alternatives.add(new Concat(List.copyOf(chain)));
            }
            return alternatives.size() == 1 ? alternatives.getFirst() : new SchemaRegex.Alt(List.copyOf(alternatives));
        }
    }

    StringAutomaton automaton() {
        return automaton;
    }

    /**
     * Per state a sequence can reach by whole tokens of {@code trie}, the fewest tokens to a match: exact costs for
     * the budget, so that a choice of nine tokens and 43 bytes is served with ten tokens, not 44. Computed once for
     * the trie and shared by the request's sequences, for an automaton without cycles whose longest text is at most
     * {@value #MAX_TOKEN_COST_BYTES} bytes, none of whose states takes more than {@value #MAX_TOKEN_COST_WIDTH} code
     * points, and whose states' walks of the trie visit at most
     * {@value #MAX_TOKEN_COST_NODES} nodes in all (a few hundredths of a second on a Zen 3 core); null for any other,
     * whose costs stay in bytes (an upper bound on tokens).
     */
    synchronized Map<Long, Integer> tokenCosts(TokenTrie trie) {
        if (tokenCostTrie != trie) {
            int longest = automaton.longestPath();
            // a state that takes thousands of characters lets most of the vocabulary through: the walks would pass
            // their bound (tens of milliseconds to find out), so such an automaton keeps its costs in bytes at once
            tokenCosts = longest >= 0 && 4L * longest <= MAX_TOKEN_COST_BYTES
                    && automaton.widestState() <= MAX_TOKEN_COST_WIDTH
                    ? TokenCosts.of(new Utf8Matcher(automaton), trie, MAX_TOKEN_COST_NODES) : null;
            tokenCostTrie = trie;
        }
        return tokenCosts;
    }

    /**
     * {@link StringAutomaton#futureClasses} for tokens of at most {@code depth} bytes, computed once and shared by
     * the request's sequences.
     */
    synchronized int[] futureClasses(int depth) {
        if (futureClasses == null || futureDepth != depth) {
            futureClasses = automaton.futureClasses(depth);
            futureDepth = depth;
        }
        return futureClasses;
    }

    @Override
    public AnswerConstraint constrain(TokenTrie trie, TokenVocabulary vocabulary, int... endTokens) {
        return new TextConstraint(this, trie, vocabulary, endTokens);
    }
}
