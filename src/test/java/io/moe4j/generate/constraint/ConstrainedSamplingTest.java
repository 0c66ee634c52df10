package io.moe4j.generate.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.generate.Sampler;
import io.moe4j.generate.SamplingParams;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Random logits (a model with random weights) drawn at temperature 1 under the constraint's mask, on the real
 * gpt-oss vocabulary (200k tokens): every sequence must end, within its token budget, in a document that Jackson
 * parses and that validates against the schema. Only the constraint can make that happen.
 */
class ConstrainedSamplingTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String[] SCHEMAS = {
        // nested objects, required everywhere
        """
        {"type": "object", "properties": {
           "name": {"type": "string"},
           "address": {"type": "object", "properties": {
              "street": {"type": "string"}, "zip": {"type": "integer"}}, "required": ["street", "zip"]}},
         "required": ["name", "address"]}""",
        // arrays with bounds, arrays of objects
        """
        {"type": "object", "properties": {
           "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
           "points": {"type": "array", "items": {"type": "object",
              "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}}},
         "required": ["tags", "points"]}""",
        // enums and const
        """
        {"type": "object", "properties": {
           "unit": {"enum": ["c", "f"]}, "level": {"type": "integer", "enum": [1, 2, 3]},
           "mode": {"const": "fast"}, "flag": {"type": "boolean"}},
         "required": ["unit", "level"]}""",
        // optional fields, type lists, anyOf, additionalProperties false
        """
        {"type": "object", "properties": {
           "city": {"type": "string", "description": "City name"},
           "days": {"type": ["integer", "null"]},
           "note": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
           "extra": {"type": "object", "properties": {"k": {"type": "string"}}}},
         "required": ["city"], "additionalProperties": false}""",
        // numbers and strings at the top level of a tuple
        """
        {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}],
         "items": {"type": "number"}, "minItems": 2, "maxItems": 5}""",
        // the weather tool's parameters from the chat fixtures
        """
        {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
           "unit": {"type": "string", "enum": ["c", "f"], "default": "c"}}, "required": ["city"]}""",
    };
    static final int MAX_TOKENS = 64;

    static ByteLevelVocabulary vocabulary;
    static TokenTrie trie;
    static int eos;

    @BeforeAll
    static void load() throws IOException {
        vocabulary = ByteLevelVocabulary.cached("gpt-oss");
        trie = ByteLevelVocabulary.cachedTrie("gpt-oss");
        eos = vocabulary.addedToken("<|return|>");
    }

    /** One constrained generation: the text, or fails when the budget or the mask breaks. */
    static String generate(JsonGrammar grammar, TokenTrie trie, TokenVocabulary vocabulary, int eos, long seed,
                           int maxTokens) {
        return generate(new JsonConstraint(grammar, trie, vocabulary, eos), vocabulary, eos, seed, maxTokens);
    }

    /** {@link #generate} along {@code constraint}, which the caller may ask afterwards. */
    static String generate(AnswerConstraint constraint, TokenVocabulary vocabulary, int eos, long seed, int maxTokens) {
        Sampler sampler = new Sampler(new SamplingParams(1.0, 0, 1, 0, seed));
        SplittableRandom logitsRandom = new SplittableRandom(seed * 31 + 7);
        int n = vocabulary.size();
        float[] logits = new float[n];
        boolean[] mask = new boolean[n];
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        for (int produced = 0; produced < maxTokens; produced++) {
            for (int i = 0; i < n; i++) {
                logits[i] = (float) (logitsRandom.nextDouble() * 8 - 4);
            }
            constraint.fillAllowed(mask, maxTokens - produced);
            int token = sampler.sample(logits, 0, n, mask);
            if (token == eos) {
                assertThat(constraint.isComplete()).isTrue();
                return text.toString(StandardCharsets.UTF_8);
            }
            constraint.accept(token);
            text.writeBytes(vocabulary.bytes(token));
        }
        // ended by its length: complete all the same (the budget lets only tokens that complete it fill the last slot)
        assertThat(constraint.isComplete()).as("no end token within %d tokens and incomplete: %s", maxTokens, text)
                .isTrue();
        return text.toString(StandardCharsets.UTF_8);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3, 4, 5})
    void sampledDocumentsParseAndValidate(int schemaIndex) throws IOException {
        JsonNode schema = JSON.readTree(SCHEMAS[schemaIndex]);
        // budgets reckoned in bytes, and with the fixed pieces in tokens: both must end every sequence
        JsonGrammar bytes = JsonGrammar.of(schema);
        JsonGrammar tokens = JsonGrammar.of(schema, trie);
        assertThat(bytes.minLength() + 1).isLessThanOrEqualTo(MAX_TOKENS);
        assertThat(tokens.minLength()).isLessThanOrEqualTo(bytes.minLength());
        List<String> texts = new ArrayList<>();
        for (long seed = 1; seed <= 17; seed++) {
            JsonGrammar grammar = seed % 2 == 0 ? bytes : tokens;
            String text = generate(grammar, trie, vocabulary, eos, seed * 1000 + schemaIndex, MAX_TOKENS);
            JsonNode doc = JSON.readTree(text);
            assertThat(SubsetValidator.validate(schema, doc)).as(text).isNull();
            texts.add(text);
            if (System.getenv("MOE4J_SHOW") != null) {
                System.out.println(schemaIndex + ": " + text.replace("\n", "\\n").replace("\t", "\\t"));
            }
        }
        assertThat(texts).doesNotHaveDuplicates(); // the seeds gave different documents
    }

    @Test
    void jsonObjectModeGivesObjects() throws IOException {
        JsonGrammar grammar = JsonGrammar.anyObject();
        for (long seed = 1; seed <= 12; seed++) {
            String text = generate(grammar, trie, vocabulary, eos, seed, MAX_TOKENS);
            assertThat(JSON.readTree(text).isObject()).as(text).isTrue();
        }
    }

    @Test
    void tokenReckoningCountsTheFewestTokensOfEachPiece() throws IOException {
        // suffixTokens against a search over the whole vocabulary: entry i is 1 + entry (i + |t|) for the best
        // token t that spells a prefix of piece[i..], and never more than the bytes left
        for (String piece : new String[] {"\"name\":", "\"address\":", "\"fast\"", "\"unit\":", "true"}) {
            byte[] b = piece.getBytes(StandardCharsets.UTF_8);
            int[] best = trie.suffixTokens(b);
            assertThat(best[b.length]).isZero();
            for (int i = b.length - 1; i >= 0; i--) {
                int expected = Integer.MAX_VALUE;
                for (int id = 0; id < vocabulary.size(); id++) {
                    byte[] t = vocabulary.bytes(id);
                    if (!vocabulary.isSpecial(id) && t.length > 0 && t.length <= b.length - i
                            && java.util.Arrays.equals(t, 0, t.length, b, i, i + t.length)) {
                        expected = Math.min(expected, 1 + best[i + t.length]);
                    }
                }
                assertThat(best[i]).as(piece + " from " + i).isEqualTo(expected).isLessThanOrEqualTo(b.length - i);
            }
        }
        JsonNode schema = JSON.readTree(SCHEMAS[0]);
        assertThat(JsonGrammar.of(schema, trie).minLength()).isLessThan(JsonGrammar.of(schema).minLength());
    }

    @Test
    void qwen3VocabularyToo() throws IOException {
        // The server's acceptance runs on Qwen3's tokenizer: its 151k byte-level tokens, <|im_end|> as the end.
        ByteLevelVocabulary qwen = ByteLevelVocabulary.cached("qwen3");
        TokenTrie qwenTrie = ByteLevelVocabulary.cachedTrie("qwen3");
        int end = qwen.addedToken("<|im_end|>");
        for (int schemaIndex : new int[] {1, 3}) {
            JsonNode schema = JSON.readTree(SCHEMAS[schemaIndex]);
            JsonGrammar grammar = JsonGrammar.of(schema, qwenTrie);
            for (long seed = 1; seed <= 5; seed++) {
                String text = generate(grammar, qwenTrie, qwen, end, seed, MAX_TOKENS);
                assertThat(SubsetValidator.validate(schema, JSON.readTree(text))).as(text).isNull();
            }
        }
    }

    /**
     * A document the budget had to close early (a string ended, tokens that would have continued it left out for
     * their cost) says so, and one that ended on the model's own choice, with room to spare, does not.
     */
    @Test
    void aDocumentTheBudgetClosedEarlySaysSo() throws IOException {
        JsonGrammar string = JsonGrammar.of(JSON.readTree(
                "{\"type\": \"object\", \"properties\": {\"s\": {\"type\": \"string\"}}, \"required\": [\"s\"]}"),
                trie);
        JsonGrammar flag = JsonGrammar.of(JSON.readTree("{\"type\": \"boolean\"}"), trie);
        for (long seed = 1; seed <= 5; seed++) {
            JsonConstraint tight = new JsonConstraint(string, trie, vocabulary, eos);
            String text = generate(tight, vocabulary, eos, seed, tight.minTokens() + 2);
            assertThat(tight.cutByBudget()).as(text).isTrue();
            JsonConstraint roomy = new JsonConstraint(flag, trie, vocabulary, eos);
            text = generate(roomy, vocabulary, eos, seed, MAX_TOKENS);
            assertThat(roomy.cutByBudget()).as(text).isFalse();
        }
    }

    @Test
    void tightBudgetsStillEndInValidDocuments() throws IOException {
        for (String s : SCHEMAS) {
            JsonNode schema = JSON.readTree(s);
            for (JsonGrammar grammar : List.of(JsonGrammar.of(schema), JsonGrammar.of(schema, trie))) {
                int min = new JsonConstraint(grammar, trie, vocabulary, eos).minTokens();
                for (int budget = min; budget < min + 3; budget++) {
                    String text = generate(grammar, trie, vocabulary, eos, budget, budget);
                    assertThat(SubsetValidator.validate(schema, JSON.readTree(text))).as(text).isNull();
                }
            }
        }
    }

    @Test
    void trieMaskEqualsTheMaskOfEveryTokenTriedAlone() throws IOException {
        // Along sampled texts, the trie walk (with its plain-string shortcut and the budget) must give the same
        // mask as feeding every token's bytes to the matcher one by one.
        for (int schemaIndex : new int[] {0, 2, 3, 4}) {
            JsonNode schema = JSON.readTree(SCHEMAS[schemaIndex]);
            JsonGrammar grammar = schemaIndex % 2 == 0 ? JsonGrammar.of(schema, trie) : JsonGrammar.of(schema);
            String text = generate(grammar, trie, vocabulary, eos, 99 + schemaIndex, MAX_TOKENS);
            byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
            JsonMatcher matcher = new JsonMatcher(grammar);
            for (int cut = 0; cut <= bytes.length; cut += 17) {
                matcher = new JsonMatcher(grammar);
                matcher.accept(java.util.Arrays.copyOf(bytes, cut));
                JsonState state = matcher.state();
                for (int remaining : new int[] {MAX_TOKENS, state.cost() + 2, state.cost() + 1}) {
                    boolean[] viaTrie = new boolean[vocabulary.size()];
                    boolean complete = state.isComplete();
                    int maxCost = remaining - 2;
                    boolean skip = state.isPlainString();
                    if (skip && state.cost() <= maxCost) {
                        System.arraycopy(trie.plainTokens(), 0, viaTrie, 0, viaTrie.length);
                    }
                    trie.mark(state, maxCost, skip, viaTrie, new boolean[1]);
                    for (int id = 0; id < vocabulary.size(); id++) {
                        boolean expected = false;
                        if (!vocabulary.isSpecial(id) && vocabulary.bytes(id).length > 0) {
                            JsonState next = state.advance(vocabulary.bytes(id));
                            expected = next != null && next.cost() <= maxCost;
                        }
                        if (viaTrie[id] != expected) {
                            throw new AssertionError("token " + id + " '" + new String(vocabulary.bytes(id),
                                    StandardCharsets.UTF_8) + "' after '" + new String(bytes, 0, cut,
                                    StandardCharsets.UTF_8) + "' budget " + remaining + ": trie " + viaTrie[id]
                                    + ", alone " + expected + " (complete " + complete + ")");
                        }
                    }
                }
            }
        }
    }
}
