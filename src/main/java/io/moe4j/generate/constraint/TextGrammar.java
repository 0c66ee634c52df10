package io.moe4j.generate.constraint;

import io.moe4j.MoeException;
import io.moe4j.generate.constraint.SchemaRegex.Chars;
import io.moe4j.generate.constraint.SchemaRegex.Concat;
import io.moe4j.generate.constraint.SchemaRegex.Node;
import io.moe4j.generate.constraint.StringAutomaton.Spelling;
import io.moe4j.generate.constraint.StringAutomaton.WorkBudget;
import java.util.ArrayList;
import java.util.List;

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

    private final StringAutomaton automaton;
    private int[] futureClasses;
    private int futureDepth;

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
        List<Node> alternatives = new ArrayList<>();
        for (int i = 0; i < choices.size(); i++) {
            String choice = choices.get(i);
            List<Node> chars = new ArrayList<>();
            for (int cp : choice.codePoints().toArray()) {
                if (cp >= Character.MIN_SURROGATE && cp <= Character.MAX_SURROGATE) {
                    throw new MoeException("'" + field + "[" + i + "]' holds a lone UTF-16 surrogate (U+"
                            + Integer.toHexString(cp).toUpperCase() + "), which no text can spell");
                }
                chars.add(new Chars(new int[] {cp, cp}));
            }
            alternatives.add(new Concat(List.copyOf(chars)));
        }
        Node expression = alternatives.size() == 1 ? alternatives.getFirst()
                : new SchemaRegex.Alt(List.copyOf(alternatives));
        return new TextGrammar(StringAutomaton.of(List.of(expression), List.of(), 0, -1, "'" + field + "'",
                new WorkBudget(Spelling.RAW_TEXT)));
    }

    /** Bytes of the shortest text the grammar allows. */
    public int minBytes() {
        return automaton.dist(automaton.start());
    }

    StringAutomaton automaton() {
        return automaton;
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
