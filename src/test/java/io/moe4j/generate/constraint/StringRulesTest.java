package io.moe4j.generate.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import io.moe4j.MoeException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Strings held to {@code pattern}, {@code format}, {@code minLength} and {@code maxLength}, against references this
 * project did not write: networknt's JSON Schema validator with format assertions on (RFC 3339 dates and times,
 * emails, hostnames, IP addresses, UUIDs, lengths in code points) and the JDK's regular expressions for patterns.
 */
class StringRulesTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final SchemaRegistry REGISTRY = SchemaRegistry.withDefaultDialect(
            SpecificationVersion.DRAFT_2020_12,
            b -> b.schemaRegistryConfig(SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()));
    private static final int MAX_TOKENS = 96;

    private static ByteLevelVocabulary vocabulary;
    private static TokenTrie trie;
    private static int eos;

    @BeforeAll
    static void load() {
        vocabulary = ByteLevelVocabulary.cached("gpt-oss");
        trie = ByteLevelVocabulary.cachedTrie("gpt-oss");
        eos = vocabulary.addedToken("<|return|>");
    }

    /** The reference's complaints about {@code value} under {@code schema}; empty when it is valid. */
    private static List<String> reference(String schema, JsonNode value) {
        Schema s = REGISTRY.getSchema(schema);
        return s.validate(value).stream().map(Object::toString).toList();
    }

    private static String schemaOf(String format) {
        return "{\"type\": \"string\", \"format\": \"" + format + "\"}";
    }

    private static boolean matches(JsonGrammar grammar, String value) {
        try {
            return JsonMatcher.matches(grammar, JSON.writeValueAsString(value));
        } catch (JsonProcessingException e) {
            throw new AssertionError(e);
        }
    }

    static List<String> formats() {
        return StringFormats.enforced().stream().sorted().toList();
    }

    /** Random logits under the mask on the real gpt-oss vocabulary: each string the reference checks. */
    @ParameterizedTest
    @MethodSource("formats")
    void sampledStringsOfEveryFormatAreValidForAnIndependentValidator(String format) throws IOException {
        String schema = schemaOf(format);
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree(schema), trie);
        Set<String> texts = new HashSet<>();
        for (long seed = 1; seed <= 6; seed++) {
            String text = ConstrainedSamplingTest.generate(grammar, trie, vocabulary, eos, seed * 7919, MAX_TOKENS);
            JsonNode value = JSON.readTree(text);
            assertThat(reference(schema, value)).as(format + ": " + text).isEmpty();
            texts.add(text);
        }
        assertThat(texts).as(format).hasSizeGreaterThan(3);
    }

    /**
     * Typical values, first checked valid by the reference, are taken; edits of them that the matcher still takes
     * are valid for the reference too (the formats are subsets, never supersets).
     */
    @Test
    void typicalValuesAreTakenAndWhatIsTakenIsValid() throws IOException {
        Map<String, List<String>> typical = Map.of(
                "date", List.of("2026-11-29", "2024-02-29", "2000-02-29", "1999-12-31"),
                "time", List.of("17:13:40Z", "08:00:00.250+05:30", "23:59:59-08:00"),
                "date-time", List.of("2026-11-29T17:13:40Z", "2026-01-01T00:00:00.5+01:00"),
                "duration", List.of("P3Y6M4DT12H30M5S", "PT0S", "P1W", "P2D", "PT36H"),
                "email", List.of("ada@example.com", "first.last+tag@mail.example.org"),
                "hostname", List.of("example.com", "localhost", "a-b.c1.example"),
                "ipv4", List.of("192.168.0.1", "0.0.0.0", "255.255.255.255"),
                "ipv6", List.of("::1", "::", "2001:db8::ff00:42:8329", "fe80:0:0:0:200:f8ff:fe21:67cf"),
                "uuid", List.of("123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000"));
        SplittableRandom random = new SplittableRandom(29);
        char[] edits = "0123456789:-.T Z+@aeF_/".toCharArray();
        int editsTaken = 0;
        for (Map.Entry<String, List<String>> e : typical.entrySet()) {
            String schema = schemaOf(e.getKey());
            JsonGrammar grammar = JsonGrammar.of(JSON.readTree(schema), 0);
            for (String value : e.getValue()) {
                assertThat(reference(schema, JSON.getNodeFactory().textNode(value))).as(value).isEmpty();
                assertThat(matches(grammar, value)).as(e.getKey() + ": " + value).isTrue();
                for (int k = 0; k < 150; k++) {
                    StringBuilder b = new StringBuilder(value);
                    int at = random.nextInt(b.length() + 1);
                    switch (random.nextInt(3)) {
                        case 0 -> b.insert(at, edits[random.nextInt(edits.length)]);
                        case 1 -> b.deleteCharAt(Math.min(at, b.length() - 1));
                        default -> b.setCharAt(Math.min(at, b.length() - 1), edits[random.nextInt(edits.length)]);
                    }
                    String edited = b.toString();
                    if (matches(grammar, edited)) {
                        editsTaken++;
                        assertThat(reference(schema, JSON.getNodeFactory().textNode(edited)))
                                .as(e.getKey() + ": " + edited + " (edited from " + value + ")").isEmpty();
                    }
                }
            }
        }
        assertThat(editsTaken).isGreaterThan(50);
    }

    @Test
    void datesFollowTheCalendar() throws IOException {
        JsonGrammar date = JsonGrammar.of(JSON.readTree(schemaOf("date")), 0);
        for (String invalid : List.of("2026-02-29", "1900-02-29", "2026-04-31", "2026-13-01", "2026-00-10",
                "26-11-29", "2026-11-29T")) {
            assertThat(reference(schemaOf("date"), JSON.getNodeFactory().textNode(invalid))).as(invalid).isNotEmpty();
            assertThat(matches(date, invalid)).as(invalid).isFalse();
        }
    }

    private static final String[] PATTERNS = {"^[a-z]+$", "^\\d{3}-\\d{4}$", "ab", "^(foo|bar)+baz?$",
        "^[^\"\\\\]{2,4}$", "^\\w+@\\w+\\.com$", "^.{0,3}$", "x*y", "^(?:a|b)c{1,2}$", "^[A-Z][a-z]*( [A-Z][a-z]*)*$",
        "^\\s*$", "^[\\u00e9-\\u00ff]+$", "^\\S+$", "^a.b$", "^(?<word>[a-c]{2})-\\1?$".replace("\\1?", "z?"),
        "0$", "^\\x41\\u0042[\\-_]?$", "^[^a-z]*$", "[0-9]{2,}", "^(a|)b$", "^€+\\.?$", "^$|^\\d{2}$",
        "^a$|^b|c$|x"};
    private static final char[] ALPHABET = "abcxyzfoorbaABZ019-_@. \"\\\n\té\u00ff€".toCharArray();

    /**
     * Random short strings: taken exactly when the JDK's regex finds the pattern in them; strings sampled under the
     * constraint are found too.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22})
    void aPatternTakesExactlyTheStringsItFinds(int index) throws IOException {
        String pattern = PATTERNS[index];
        // ECMA-262's $ is the end of the input (the JDK's also matches before a final line break, its \z does not),
        // and its \s holds Unicode's spaces and the BOM (the JDK's only ASCII ones): both written out for the JDK
        String ecmaSpace = "\\t\\n\\x0B\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff";
        String forJdk = pattern.replace("\\s", "[" + ecmaSpace + "]").replace("\\S", "[^" + ecmaSpace + "]");
        Pattern jdk = Pattern.compile(forJdk.replaceAll("\\$(?=\\||$)", "\\\\z"));
        String schema = "{\"type\": \"string\", \"pattern\": " + JSON.writeValueAsString(pattern) + "}";
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree(schema), 0);
        JsonGrammar sampled = JsonGrammar.of(JSON.readTree(schema), trie);
        for (long seed = 1; seed <= 2; seed++) {
            String text = ConstrainedSamplingTest.generate(sampled, trie, vocabulary, eos, seed * 31 + index, 48);
            String value = JSON.readTree(text).textValue();
            assertThat(jdk.matcher(value).find()).as(pattern + " sampled " + text).isTrue();
        }
        SplittableRandom random = new SplittableRandom(index);
        // characters of the pattern itself make matches likely, the rest make near misses
        String own = pattern.replaceAll("[\\\\^$\\[\\](){}*+?|]", "");
        int taken = 0;
        for (int i = 0; i < 1500; i++) {
            StringBuilder b = new StringBuilder();
            int length = random.nextInt(9);
            for (int k = 0; k < length; k++) {
                boolean fromPattern = !own.isEmpty() && random.nextBoolean();
                b.append(fromPattern ? own.charAt(random.nextInt(own.length())) : ALPHABET[random.nextInt(ALPHABET.length)]);
            }
            String s = b.toString();
            boolean expected = jdk.matcher(s).find();
            assertThat(matches(grammar, s)).as(pattern + " on " + JSON.writeValueAsString(s)).isEqualTo(expected);
            taken += expected ? 1 : 0;
        }
        System.out.println(pattern + ": " + taken + " of 1500 random strings fit");
    }

    /** Sampled strings of patterns and length bounds: the reference validates each (pattern and code points). */
    @ParameterizedTest
    @ValueSource(strings = {
        "{\"type\": \"string\", \"minLength\": 3, \"maxLength\": 5}",
        "{\"type\": \"string\", \"minLength\": 20}",
        "{\"type\": \"string\", \"maxLength\": 2}",
        "{\"type\": \"string\", \"pattern\": \"^[A-Z]{2}[0-9]{2,6}$\"}",
        "{\"type\": \"string\", \"pattern\": \"^[a-z]+(-[a-z]+)*$\", \"maxLength\": 12, \"minLength\": 4}",
        "{\"type\": \"string\", \"pattern\": \"[0-9]\", \"format\": \"hostname\", \"maxLength\": 20}",
        "{\"type\": \"string\", \"format\": \"email\", \"maxLength\": 254, \"minLength\": 12}",
        "{\"type\": [\"string\", \"null\"], \"pattern\": \"^\\\\+?[0-9 ]{7,15}$\"}",
        "{\"type\": \"object\", \"properties\": {\"when\": {\"type\": \"string\", \"format\": \"date-time\"},"
            + " \"who\": {\"type\": \"string\", \"format\": \"email\"}, \"code\": {\"pattern\": \"^[A-F0-9]{6}$\"}},"
            + " \"required\": [\"when\", \"who\", \"code\"]}",
    })
    void sampledDocumentsWithStringRulesAreValidForTheReference(String schema) throws IOException {
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree(schema), trie);
        JsonGrammar bytes = JsonGrammar.of(JSON.readTree(schema));
        for (long seed = 1; seed <= 4; seed++) {
            String text = ConstrainedSamplingTest.generate(seed % 2 == 0 ? grammar : bytes, trie, vocabulary, eos,
                    seed * 104729, 2 * MAX_TOKENS);
            assertThat(reference(schema, JSON.readTree(text))).as(text).isEmpty();
        }
    }

    /** A budget of exactly the shortest document's tokens still ends in a valid one, for every format. */
    @ParameterizedTest
    @MethodSource("formats")
    void theTightestBudgetStillEndsValid(String format) throws IOException {
        String schema = schemaOf(format);
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree(schema));
        int budget = grammar.minLength() + 1;
        for (long seed = 1; seed <= 2; seed++) {
            String text = ConstrainedSamplingTest.generate(grammar, trie, vocabulary, eos, seed, budget);
            assertThat(reference(schema, JSON.readTree(text))).as(text).isEmpty();
        }
    }

    /**
     * The mask inside strings with rules (plain tokens decided by the trie walk with the rule's state, or by their
     * length) equals feeding each token's bytes to the matcher alone, at points along sampled texts and budgets.
     */
    @ParameterizedTest
    @ValueSource(strings = {
        "{\"type\": \"string\", \"maxLength\": 9}",
        "{\"type\": \"string\", \"minLength\": 12}",
        "{\"type\": \"string\", \"pattern\": \"[0-9]{2}\", \"maxLength\": 14}",
        "{\"type\": \"string\", \"format\": \"email\"}",
        "{\"type\": \"string\", \"pattern\": \"^[a-z]+( [a-z]+)*$\", \"maxLength\": 11}",
    })
    void theMaskInARuleStringIsEveryTokenTriedAlone(String schemaText) throws IOException {
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree(schemaText));
        int[] byteToken = MaskCostTest.singleByteTokens(vocabulary);
        int n = vocabulary.size();
        for (long seed = 1; seed <= 1; seed++) {
            String text = ConstrainedSamplingTest.generate(grammar, trie, vocabulary, eos, seed * 13, 40);
            byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            for (int cut = 1; cut < bytes.length; cut += 5) {
                JsonConstraint constraint = new JsonConstraint(grammar, trie, vocabulary, eos);
                JsonMatcher matcher = new JsonMatcher(grammar);
                for (int i = 0; i < cut; i++) {
                    constraint.accept(byteToken[bytes[i] & 0xFF]);
                }
                matcher.accept(java.util.Arrays.copyOf(bytes, cut));
                JsonState state = matcher.state();
                for (int remaining : new int[] {40, state.cost() + 2}) {
                    boolean[] mask = new boolean[n];
                    constraint.fillAllowed(mask, remaining);
                    for (int id = 0; id < n; id++) {
                        boolean expected = state.isComplete() && id == eos;
                        if (id != eos && !vocabulary.isSpecial(id) && vocabulary.bytes(id).length > 0) {
                            JsonState next = state.advance(vocabulary.bytes(id));
                            expected = next != null && next.cost() <= remaining - 2;
                        }
                        if (mask[id] != expected) {
                            throw new AssertionError("token " + id + " " + JSON.writeValueAsString(new String(
                                    vocabulary.bytes(id), java.nio.charset.StandardCharsets.UTF_8)) + " after "
                                    + JSON.writeValueAsString(new String(bytes, 0, cut,
                                    java.nio.charset.StandardCharsets.UTF_8)) + " budget " + remaining + ": mask "
                                    + mask[id] + ", alone " + expected);
                        }
                    }
                }
            }
        }
    }

    /** Keyword values a reader might trip on: read as JSON Schema means them, or refused naming them. */
    @Test
    void keywordValuesAreReadAsJsonSchemaMeansThem() throws IOException {
        // 2.0 is an integer; a surrogate pair in two escapes is one character; a $ref's %XX is decoded
        JsonGrammar two = JsonGrammar.of(JSON.readTree("{\"type\": \"string\", \"minLength\": 2.0}"), 0);
        assertThat(JsonMatcher.matches(two, "\"ab\"")).isTrue();
        assertThat(JsonMatcher.matches(two, "\"a\"")).isFalse();
        JsonGrammar smile = JsonGrammar.of(JSON.readTree(
                "{\"type\": \"string\", \"pattern\": \"^\\\\uD83D\\\\uDE00+$\"}"), 0);
        assertThat(JsonMatcher.matches(smile, "\"\uD83D\uDE00\uD83D\uDE00\"")).isTrue();
        assertThat(JsonMatcher.matches(smile, "\"x\"")).isFalse();
        JsonGrammar ref = JsonGrammar.of(JSON.readTree(
                "{\"$defs\": {\"a b\": {\"const\": 1}}, \"$ref\": \"#/$defs/a%20b\"}"), 0);
        assertThat(JsonMatcher.matches(ref, "1")).isTrue();
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree("{\"type\": \"string\", \"format\": 123}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("'format'").hasMessageContaining("string");
        // a schema whose strings take too much to compile is refused in bounded time, naming why
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"string\", \"pattern\": \"^.{0,1000}a.{0,1000}b.{0,1000}c.{0,1000}d$\"}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("too much work");
    }

    /** A format without a type is written as a string of the format (a schema with no type would take any value). */
    @Test
    void aFormatWithoutATypeIsAStringOfTheFormat() throws IOException {
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree("{\"format\": \"uuid\"}"), 0);
        assertThat(JsonMatcher.matches(grammar, "\"123e4567-e89b-12d3-a456-426614174000\"")).isTrue();
        assertThat(JsonMatcher.matches(grammar, "\"not a uuid\"")).isFalse();
        JsonGrammar annotation = JsonGrammar.of(JSON.readTree("{\"format\": \"uri\"}"), 0);
        assertThat(JsonMatcher.matches(annotation, "3")).isTrue(); // uri is an annotation only
    }

    @Test
    void enumValuesAreKeptToThePattern() throws IOException {
        JsonGrammar grammar = JsonGrammar.of(JSON.readTree(
                "{\"enum\": [\"ab\", \"abc\", \"x\", 3], \"pattern\": \"^a\", \"minLength\": 3}"), 0);
        assertThat(JsonMatcher.matches(grammar, "\"abc\"")).isTrue();
        assertThat(JsonMatcher.matches(grammar, "3")).isTrue();
        assertThat(JsonMatcher.matches(grammar, "\"ab\"")).isFalse();
        assertThat(JsonMatcher.matches(grammar, "\"x\"")).isFalse();
    }

    @Test
    void unsupportedOrContradictoryRulesAreNamed() throws IOException {
        Map<String, String> refused = Map.ofEntries(
                Map.entry("^(a)\\\\1$", "backreference"),
                Map.entry("(?=a)b", "lookaround"),
                Map.entry("\\\\bword", "word boundary"),
                Map.entry("\\\\p{L}+", "Unicode property"),
                Map.entry("(^a|^b)", "'^' inside"),
                Map.entry("a^b", "'^' inside"),
                Map.entry("a**", "nothing to repeat"),
                Map.entry("x{1,2}{3}", "nothing to repeat"),
                Map.entry("(?<n>x)(?<n>y)", "second group named 'n'"),
                Map.entry("(?i)abc", "inline flags"),
                Map.entry("\\\\uD800x", "lone surrogate"),
                Map.entry("(ab", "without its ')'"),
                Map.entry("[a-", "without its ']'"),
                Map.entry("a{3,1}", "below its minimum"),
                Map.entry("^.{0,5000}$", "above 1000"));
        for (Map.Entry<String, String> e : refused.entrySet()) {
            String schema = "{\"type\": \"object\", \"properties\": {\"s\": {\"type\": \"string\", \"pattern\": \""
                    + e.getKey() + "\"}}}";
            assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(schema), 0)).as(e.getKey())
                    .isInstanceOf(MoeException.class).hasMessageContaining("$.properties.s")
                    .hasMessageContaining(e.getValue());
        }
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"string\", \"minLength\": 4, \"maxLength\": 3}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("minLength 4 is above maxLength 3");
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"string\", \"pattern\": \"^[0-9]{2}$\", \"minLength\": 3}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("allows no value");
        // a maximum length beside a pattern is kept beside its automaton: large ones cost nothing, exact all the same
        JsonGrammar long50k = JsonGrammar.of(JSON.readTree(
                "{\"type\": \"string\", \"pattern\": \"^[a-z]*$\", \"maxLength\": 50000}"), 0);
        assertThat(JsonMatcher.matches(long50k, "\"" + "a".repeat(50000) + "\"")).isTrue();
        assertThat(JsonMatcher.matches(long50k, "\"" + "a".repeat(50001) + "\"")).isFalse();
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"string\", \"pattern\": \"^[a-z]*$\", \"maxLength\": 200000}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("at most 100000");
        assertThatThrownBy(() -> JsonGrammar.of(JSON.readTree(
                "{\"type\": \"string\", \"pattern\": \"^[0-9]{3}$\", \"maxLength\": 2}"), 0))
                .isInstanceOf(MoeException.class).hasMessageContaining("more than maxLength 2");
    }

    /** Each format's automaton, built once, stays small enough to build per request. */
    @Test
    void formatAutomataAreSmall() {
        List<String> sizes = new ArrayList<>();
        for (String format : formats()) {
            StringAutomaton a = StringAutomaton.of(List.of(SchemaRegex.parse(StringFormats.expression(format)
                    .orElseThrow(), format)), 0, -1, format);
            sizes.add(format + " " + a.stateCount());
            assertThat(a.stateCount()).as(format).isLessThan(2000);
        }
        System.out.println("format automaton states: " + sizes);
    }
}
