package io.moe4j.generate.constraint;

/**
 * What a constrained reply's answer may be, compiled once per request and shared by its sequences: a JSON schema's
 * documents ({@link JsonGrammar}) or the texts of a regular expression or a list of choices ({@link TextGrammar}).
 */
public sealed interface AnswerGrammar permits JsonGrammar, TextGrammar {
    /**
     * A constraint that follows one sequence through this grammar.
     *
     * @param endTokens the end-of-sequence ids (eos, end of turn) that may end the answer; at least one
     */
    AnswerConstraint constrain(TokenTrie trie, TokenVocabulary vocabulary, int... endTokens);
}
