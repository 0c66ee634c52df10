package io.moe4j.generate.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import io.moe4j.MoeException;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Numbers held to minimum, maximum and their exclusive forms: which texts the matcher takes is decided against
 * {@link BigDecimal}'s comparison of the values, and sampled documents against networknt's validator.
 */
class NumberBoundsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** bounds as schema keywords, then whether integer */
    private static final String[] BOUNDS = {
        "\"minimum\": 0", "\"minimum\": 1, \"maximum\": 10", "\"exclusiveMinimum\": 0, \"maximum\": 1",
        "\"minimum\": -2.5, \"exclusiveMaximum\": 3.75", "\"maximum\": -0.125", "\"exclusiveMaximum\": 0",
        "\"minimum\": -100, \"maximum\": -7", "\"minimum\": 0.05, \"maximum\": 0.1", "\"exclusiveMinimum\": 99.9",
        "\"minimum\": 17, \"maximum\": 1234", "\"minimum\": 0.5, \"maximum\": 2.5",
    };

    /** multipleOf, alone and beside bounds, as schema keywords */
    private static final String[] MULTIPLES = {
        "\"multipleOf\": 2", "\"multipleOf\": 0.5", "\"multipleOf\": 0.01", "\"multipleOf\": 7",
        "\"multipleOf\": 1.5", "\"multipleOf\": 100", "\"multipleOf\": 1e-3", "\"multipleOf\": 0.25, \"exclusiveMinimum\": -5",
        "\"multipleOf\": 3, \"minimum\": 10, \"maximum\": 100", "\"multipleOf\": 2.5e1",
        "\"multipleOf\": 1000", "\"multipleOf\": 5000, \"maximum\": 20000", "\"multipleOf\": 0.0025",
        "\"multipleOf\": 120", "\"multipleOf\": 700, \"minimum\": -1500",
    };

    /**
     * Random texts, and every text of up to three whole and two fraction digits: taken exactly when BigDecimal finds
     * the value a multiple (and in range).
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
    void multiplesAreTakenExactly(int index) throws IOException {
        for (String type : new String[] {"number", "integer"}) {
            JsonNode schema = JSON.readTree("{\"type\": \"" + type + "\", " + MULTIPLES[index] + "}");
            JsonGrammar grammar = JsonGrammar.of(schema, 0);
            BigDecimal divisor = schema.get("multipleOf").decimalValue();
            SplittableRandom random = new SplittableRandom(100 + index);
            int taken = 0;
            java.util.List<String> texts = new java.util.ArrayList<>();
            for (int i = 0; i < 3000; i++) {
                texts.add(randomNumber(random, type.equals("integer")));
            }
            for (int w = 0; w < 1000; w++) {
                texts.add(Integer.toString(w));
                texts.add("-" + w);
                if (type.equals("number")) {
                    for (int f = 0; f < 100; f += 1 + random.nextInt(7)) {
                        texts.add(w + "." + f / 10 + (f % 10 == 0 && random.nextBoolean() ? "" : Integer.toString(f % 10)));
                    }
                }
            }
            for (String text : texts) {
                BigDecimal v = new BigDecimal(text);
                boolean expected = v.remainder(divisor).signum() == 0 && inRange(schema, v)
                        && !(text.startsWith("-") && v.signum() == 0);
                boolean got = JsonMatcher.matches(grammar, text);
                if (text.startsWith("-") && v.signum() == 0) {
                    continue; // -0: the syntax's business (NumberRanges), whatever the divisor
                }
                assertThat(got).as(schema + " on " + text).isEqualTo(expected);
                taken += expected ? 1 : 0;
            }
            assertThat(taken).as(schema.toString()).isGreaterThan(10);
        }
    }

    /** Random texts near and far from the bounds: taken exactly when their value is in range. */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
    void takenExactlyWhenTheValueIsInRange(int index) throws IOException {
        for (String type : new String[] {"number", "integer"}) {
            JsonNode schema = JSON.readTree("{\"type\": \"" + type + "\", " + BOUNDS[index] + "}");
            if (type.equals("integer") && java.util.stream.IntStream.rangeClosed(-3000, 3000)
                    .noneMatch(i -> inRange(schema, BigDecimal.valueOf(i)))) {
                // no whole number within the bounds (all of them lie in [-3000, 3000]): refused, naming why
                assertThatThrownBy(() -> JsonGrammar.of(schema, 0)).isInstanceOf(MoeException.class)
                        .hasMessageContaining("allows no value");
                continue;
            }
            JsonGrammar grammar = JsonGrammar.of(schema, 0);
            SplittableRandom random = new SplittableRandom(index);
            int taken = 0;
            for (int i = 0; i < 3000; i++) {
                String text = randomNumber(random, type.equals("integer"));
                boolean expected = inRange(schema, new BigDecimal(text));
                assertThat(JsonMatcher.matches(grammar, text)).as(schema + " on " + text).isEqualTo(expected);
                taken += expected ? 1 : 0;
            }
            assertThat(taken).as(schema.toString()).isPositive();
            // zero written with a minus is zero: never below a range that starts at zero or above
            if (inRange(schema, BigDecimal.ZERO)) {
                assertThat(JsonMatcher.matches(grammar, "0")).isTrue();
            }
            if (!inRange(schema, BigDecimal.ZERO)) {
                assertThat(JsonMatcher.matches(grammar, "-0")).as(schema.toString()).isFalse();
                assertThat(JsonMatcher.matches(grammar, "-0.0")).as(schema.toString()).isFalse();
            }
        }
    }

    /** A number without exponent or negative zero: sign, up to 4 whole digits, maybe a fraction of up to 4. */
    private static String randomNumber(SplittableRandom random, boolean integer) {
        StringBuilder b = new StringBuilder();
        int whole = random.nextInt(4) == 0 ? 0 : random.nextInt(random.nextBoolean() ? 12 : 2000);
        b.append(whole);
        if (!integer && random.nextBoolean()) {
            b.append('.');
            int digits = 1 + random.nextInt(4);
            for (int k = 0; k < digits; k++) {
                b.append(random.nextInt(10));
            }
        }
        boolean zero = new BigDecimal(b.toString()).signum() == 0;
        return random.nextBoolean() && !zero ? "-" + b : b.toString();
    }

    private static boolean inRange(JsonNode schema, BigDecimal v) {
        boolean ok = true;
        if (schema.has("minimum")) {
            ok &= v.compareTo(schema.get("minimum").decimalValue()) >= 0;
        }
        if (schema.has("exclusiveMinimum")) {
            ok &= v.compareTo(schema.get("exclusiveMinimum").decimalValue()) > 0;
        }
        if (schema.has("maximum")) {
            ok &= v.compareTo(schema.get("maximum").decimalValue()) <= 0;
        }
        if (schema.has("exclusiveMaximum")) {
            ok &= v.compareTo(schema.get("exclusiveMaximum").decimalValue()) < 0;
        }
        return ok;
    }

    /** Documents sampled on the real vocabulary with random logits: networknt's validator accepts each. */
    @Test
    void sampledDocumentsAreValidForTheReference() throws IOException {
        String schema = """
                {"type": "object", "properties": {
                   "count": {"type": "integer", "minimum": 1, "maximum": 20},
                   "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                   "temp": {"type": "number", "minimum": -40.5, "maximum": 60},
                   "level": {"enum": [1, 5, 9, "x"], "maximum": 6},
                   "step": {"type": "number", "multipleOf": 0.25, "minimum": -3},
                   "even": {"type": "integer", "multipleOf": 2},
                   "pick": {"enum": [3, 4, 6, 9], "multipleOf": 3}},
                 "required": ["count", "ratio", "temp", "level", "step", "even", "pick"]}""";
        var reference = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12,
                b -> b.schemaRegistryConfig(SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()))
                .getSchema(schema);
        ByteLevelVocabulary vocabulary = ByteLevelVocabulary.cached("gpt-oss");
        TokenTrie trie = ByteLevelVocabulary.cachedTrie("gpt-oss");
        int eos = vocabulary.addedToken("<|return|>");
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree(schema), trie);
        for (long seed = 1; seed <= 6; seed++) {
            String text = ConstrainedSamplingTest.generate(grammar, trie, vocabulary, eos, seed * 131, 160);
            assertThat(reference.validate(JSON.readTree(text))).as(text).isEmpty();
        }
    }

    @Test
    void boundsThatCannotHoldOrBeReadAreNamed() {
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 3}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("allows no value");
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"integer\", \"exclusiveMinimum\": 2, \"exclusiveMaximum\": 3}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("allows no value");
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"number\", \"minimum\": \"0\"}}}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("'minimum'")
                .hasMessageContaining("$.properties.n");
        for (String divisor : new String[] {"0", "-2", "\"2\"", "1e-30", "123457", "1e400", "4099"}) {
            assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                    "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"number\", \"multipleOf\": "
                            + divisor + "}}}"), 0)).as(divisor)
                    .isInstanceOf(MoeException.class).hasMessageContaining("multipleOf")
                    .hasMessageContaining("$.properties.n");
        }
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"integer\", \"multipleOf\": 7, \"minimum\": 1, \"maximum\": 6}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("allows no value");
        // 1e400 reads as infinity: a bound or a listed value beyond float64 is refused, not written as "Infinity"
        for (String schema : new String[] {"{\"type\": \"number\", \"maximum\": 1e400}",
                "{\"enum\": [3, 7], \"minimum\": -1e400}", "{\"const\": 1e400}", "{\"enum\": [[1, 1e400]]}"}) {
            assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(schema), 0)).as(schema)
                    .isInstanceOf(MoeException.class).hasMessageContaining("float64");
        }
        // a bound beside enum is read as beside a type
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree("{\"enum\": [3, 7], \"minimum\": \"5\"}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("'minimum'");
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree("{\"const\": 5, \"minimum\": 6}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("no enum/const value fits");
    }

    /** Powers of ten take a few states, whatever their size; the text stays within its length cap. */
    @Test
    void largePowersOfTenAndTheLengthCap() throws IOException {
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree("{\"type\": \"integer\", \"multipleOf\": 1e15}"), 0);
        assertThat(JsonMatcher.matches(grammar, "3000000000000000")).isTrue();
        assertThat(JsonMatcher.matches(grammar, "-12000000000000000")).isTrue();
        assertThat(JsonMatcher.matches(grammar, "300000000000000")).isFalse();
        assertThat(JsonMatcher.matches(grammar, "0")).isTrue();
        JsonGrammar any = JsonGrammar.of(JSON.readTree("{\"type\": \"number\", \"multipleOf\": 1}"), 0);
        assertThat(JsonMatcher.matches(any, "-" + "9".repeat(20) + "." + "0".repeat(20))).isTrue();
        assertThat(JsonMatcher.isPrefix(any, "9".repeat(43))).isFalse();
    }

    /** Draft 4's boolean exclusiveMinimum makes its minimum exclusive. */
    @Test
    void draftFourBooleanExclusivesQualifyTheirBound() throws IOException {
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree(
                "{\"type\": \"integer\", \"minimum\": 0, \"exclusiveMinimum\": true}"), 0);
        assertThat(JsonMatcher.matches(grammar, "0")).isFalse();
        assertThat(JsonMatcher.matches(grammar, "1")).isTrue();
    }
}
