package io.moe4j.generate.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;

/**
 * The documents a JSON schema allows, as a byte-level matcher's start state. Compile once per request; it is
 * immutable and may be shared by the sequences of a batch.
 */
public final class JsonGrammar implements AnswerGrammar {
    /** Whitespace bytes allowed in one gap between tokens of the JSON text by default. */
    public static final int DEFAULT_MAX_WHITESPACE = 4;

    private final ValueSchema root;
    private final int maxWhitespace;

    private JsonGrammar(ValueSchema root, int maxWhitespace) {
        if (maxWhitespace < 0 || maxWhitespace > 64) {
            throw new MoeException("whitespace per gap must be in [0, 64], got " + maxWhitespace);
        }
        this.root = root;
        this.maxWhitespace = maxWhitespace;
    }

    /**
     * The documents {@code schema} allows. Unsupported keywords fail with a {@link MoeException} that names the
     * keyword and its path in the schema; see {@link JsonSchemaCompiler} for what is supported.
     */
    public static JsonGrammar of(JsonNode schema) {
        return of(schema, DEFAULT_MAX_WHITESPACE);
    }

    public static JsonGrammar of(JsonNode schema, int maxWhitespace) {
        return new JsonGrammar(JsonSchemaCompiler.compile(schema, PieceCost.BYTES), maxWhitespace);
    }

    /**
     * As {@link #of(JsonNode)}, with the budget reckoned in {@code trie}'s tokens for the fixed pieces of the
     * document (keys, enum values) rather than in bytes: closer to what a completion really costs, so a tighter
     * {@code max_tokens} still fits and the way to the end is forced later. Use the grammar with that trie only.
     */
    public static JsonGrammar of(JsonNode schema, TokenTrie trie) {
        return of(schema, DEFAULT_MAX_WHITESPACE, trie);
    }

    public static JsonGrammar of(JsonNode schema, int maxWhitespace, TokenTrie trie) {
        return new JsonGrammar(JsonSchemaCompiler.compile(schema, trie::suffixTokens), maxWhitespace);
    }

    /** Any JSON object ({@code response_format: {"type": "json_object"}}). */
    public static JsonGrammar anyObject() {
        return anyObject(DEFAULT_MAX_WHITESPACE);
    }

    public static JsonGrammar anyObject(int maxWhitespace) {
        return new JsonGrammar(ValueSchema.AnyValueSchema.OBJECT, maxWhitespace);
    }

    /** Whitespace bytes allowed before the value and in each gap between its tokens (none after it). */
    public int maxWhitespace() {
        return maxWhitespace;
    }

    /** Bytes of the shortest document (fixed pieces in tokens for a grammar made with a trie). */
    public int minLength() {
        return root.minLength();
    }

    JsonState start() {
        return new JsonState(this, new Stack[] {Stack.of(RootFrame.start(root), null)});
    }

    @Override
    public AnswerConstraint constrain(TokenTrie trie, TokenVocabulary vocabulary, int... endTokens) {
        return new JsonConstraint(this, trie, vocabulary, endTokens);
    }
}
