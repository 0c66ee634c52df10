package io.moe4j.generate.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class JsonMatcherTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static JsonGrammar grammar(String schema) {
        try {
            return JsonGrammar.of(JSON.readTree(schema));
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException(e);
        }
    }

    private static final JsonGrammar PERSON = grammar("""
            {"type": "object", "properties": {
               "name": {"type": "string"},
               "age": {"type": "integer"},
               "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
               "unit": {"enum": ["c", "f"]}},
             "required": ["name"]}""");

    @Test
    void acceptsDocumentsTheSchemaAllows() {
        assertThat(JsonMatcher.matches(PERSON, "{\"name\":\"Ann\"}")).isTrue();
        assertThat(JsonMatcher.matches(PERSON, "{\"age\": 41, \"name\": \"Ann\", \"unit\": \"f\"}")).isTrue();
        assertThat(JsonMatcher.matches(PERSON, "{\"name\":\"A\",\"tags\":[\"x\",\"y\"]}")).isTrue();
        assertThat(JsonMatcher.matches(PERSON, "{\"name\":\"A\",\"tags\":[]}")).isTrue();
        assertThat(JsonMatcher.matches(PERSON, "{\n  \"name\": \"x\"\n}")).isTrue();
    }

    @Test
    void rejectsWhatTheSchemaDoesNot() {
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"nam\"")).isFalse();              // unknown key
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"name\":1")).isFalse();            // wrong type
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"name\":\"A\",\"name\"")).isFalse(); // repeated key
        assertThat(JsonMatcher.isPrefix(PERSON, "{}")).isFalse();                     // required missing
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"age\":1}")).isFalse();
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"name\":\"A\",}")).isFalse();      // trailing comma
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"name\":\"A\",\"tags\":[\"1\",\"2\",")).isFalse(); // maxItems
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"name\":\"A\",\"unit\":\"k")).isFalse();   // enum
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"name\":\"A\",\"age\":1.5")).isFalse();    // integer
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"name\":\"A\",\"age\":01")).isFalse();     // leading zero
        assertThat(JsonMatcher.isPrefix(PERSON, "{\"name\":\"A\"} ")).isFalse();       // nothing after the value
        assertThat(JsonMatcher.isPrefix(PERSON, "[")).isFalse();
        // prefixes stay prefixes, and are not complete
        JsonMatcher m = new JsonMatcher(PERSON);
        assertThat(m.accept("{\"name\":\"A")).isTrue();
        assertThat(m.isComplete()).isFalse();
        assertThat(m.minBytesToComplete()).isEqualTo(2); // "}
    }

    @Test
    void stringsTakeEscapesAndUtf8ButNotRawControlBytes() {
        JsonGrammar string = grammar("{\"type\": \"string\"}");
        assertThat(JsonMatcher.matches(string, "\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC\"")).isTrue();
        assertThat(JsonMatcher.matches(string, "\"h\u00e9llo \u20ac \ud83d\ude00\"")).isTrue();
        assertThat(JsonMatcher.isPrefix(string, "\"a\nb")).isFalse();
        assertThat(JsonMatcher.isPrefix(string, "\"\\x")).isFalse();
        assertThat(JsonMatcher.isPrefix(string, "\"\\u12G")).isFalse();
        assertThat(JsonMatcher.isPrefix(string, "\"\\ud800")).isFalse(); // surrogates only as raw UTF-8
        JsonMatcher m = new JsonMatcher(string);
        assertThat(m.accept(new byte[] {'"', (byte) 0xC3})).isTrue();   // half of é: still a prefix
        assertThat(m.minBytesToComplete()).isEqualTo(2);
        assertThat(m.accept(new byte[] {'x'})).isFalse();                // not a continuation byte
        assertThat(new JsonMatcher(string).accept(new byte[] {'"', (byte) 0xC0})).isFalse(); // overlong lead
        assertThat(new JsonMatcher(string).accept(new byte[] {'"', (byte) 0xED, (byte) 0xA0})).isFalse(); // surrogate
    }

    @Test
    void numbersFollowTheJsonGrammar() {
        JsonGrammar number = grammar("{\"type\": \"array\", \"items\": {\"type\": \"number\"}}");
        assertThat(JsonMatcher.matches(number, "[0,-1,2.5,-0.25e+10,3E-2,7e1]")).isTrue();
        for (String bad : new String[] {"[-]", "[1.]", "[.5]", "[1e]", "[+1]", "[00]", "[1.2.3]", "[--1]"}) {
            assertThat(JsonMatcher.matches(number, bad)).as(bad).isFalse();
        }
        // every number written parses to a finite float64, not to infinity or to zero
        assertThat(JsonMatcher.matches(number, "[99999999999999999999.5e99,1e-99]")).isTrue();
        for (String far : new String[] {"[1e999]", "[94141e960]", "[1e-100]"}) {
            assertThat(JsonMatcher.matches(number, far)).as(far).isFalse();
        }
        JsonGrammar top = grammar("{\"type\": \"integer\"}");
        assertThat(JsonMatcher.matches(top, "-42")).isTrue();
        assertThat(JsonMatcher.isPrefix(top, "4.")).isFalse();
    }

    @Test
    void enumsConstAnyOfAndTypeLists() {
        JsonGrammar g = grammar("""
                {"type": "object", "properties": {
                   "n": {"enum": [1, 12, "x", null, {"a": [true]}]},
                   "k": {"const": "fixed"},
                   "v": {"type": ["integer", "null"]},
                   "w": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "boolean"}}]}}}""");
        assertThat(JsonMatcher.matches(g, "{\"n\":1}")).isTrue();
        assertThat(JsonMatcher.matches(g, "{\"n\":12}")).isTrue();
        assertThat(JsonMatcher.matches(g, "{\"n\":{\"a\":[true]}}")).isTrue();
        assertThat(JsonMatcher.isPrefix(g, "{\"n\":13")).isFalse();
        assertThat(JsonMatcher.isPrefix(g, "{\"n\":2")).isFalse();
        assertThat(JsonMatcher.matches(g, "{\"k\":\"fixed\",\"v\":null,\"w\":[true,false]}")).isTrue();
        assertThat(JsonMatcher.matches(g, "{\"v\":7,\"w\":\"s\"}")).isTrue();
        assertThat(JsonMatcher.isPrefix(g, "{\"k\":\"fixes")).isFalse();
        assertThat(JsonMatcher.isPrefix(g, "{\"w\":1")).isFalse();
    }

    @Test
    void jsonObjectModeTakesAnyObject() {
        JsonGrammar any = JsonGrammar.anyObject();
        assertThat(JsonMatcher.matches(any, "{\"a\":[1,{\"b\":null}],\"c\":\"d\",\"e\":{}}")).isTrue();
        assertThat(JsonMatcher.matches(any, "{}")).isTrue();
        assertThat(JsonMatcher.isPrefix(any, "[")).isFalse();
        assertThat(JsonMatcher.isPrefix(any, "{\"a\":tru ")).isFalse();
        // free values nest to a bound, then only scalars
        String deep = "{\"a\":" + "[".repeat(Values.MAX_FREE_DEPTH - 2);
        assertThat(JsonMatcher.isPrefix(any, deep)).isTrue();
        assertThat(JsonMatcher.isPrefix(any, deep + "[")).isFalse();
        assertThat(JsonMatcher.matches(any, deep + "1" + "]".repeat(Values.MAX_FREE_DEPTH - 2) + "}")).isTrue();
    }

    @Test
    void whitespaceIsBoundedPerGap() {
        JsonGrammar g = JsonGrammar.of(JSON.createObjectNode().put("type", "object"), 2);
        assertThat(JsonMatcher.matches(g, "{  \"a\" :  1  }")).isTrue();
        assertThat(JsonMatcher.isPrefix(g, "{   ")).isFalse();
        assertThat(JsonMatcher.isPrefix(g, "  {")).isTrue();
        assertThat(JsonMatcher.isPrefix(g, "   {")).isFalse();
    }

    @Test
    void refsToDefinitionsAreInlined() {
        JsonGrammar g = grammar("""
                {"$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}},
                 "type": "array", "items": {"$ref": "#/$defs/P"}}""");
        assertThat(JsonMatcher.matches(g, "[{\"x\":1},{\"x\":2}]")).isTrue();
        assertThat(JsonMatcher.isPrefix(g, "[{}")).isFalse();
    }

    @Test
    void unsupportedKeywordsAreNamedWithTheirPath() {
        assertThatThrownBy(() -> grammar("""
                {"type": "object", "properties": {"name": {"type": "string", "pattern": "^a(?=b)"}}}"""))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("'pattern'").hasMessageContaining("lookaround")
                .hasMessageContaining("$.properties.name");
        assertThatThrownBy(() -> grammar("{\"type\": \"array\", \"items\": {\"type\": \"number\", \"not\": {}}}"))
                .isInstanceOf(MoeException.class).hasMessageContaining("'not'").hasMessageContaining("$.items");
        assertThatThrownBy(() -> grammar("{\"allOf\": []}")).isInstanceOf(MoeException.class)
                .hasMessageContaining("'allOf'").hasMessageContaining("at $");
        assertThatThrownBy(() -> grammar("{\"type\": \"object\", \"required\": [\"a\"]}"))
                .isInstanceOf(MoeException.class).hasMessageContaining("'a'").hasMessageContaining("$.required");
        assertThatThrownBy(() -> grammar("{\"type\": \"strin\"}")).isInstanceOf(MoeException.class)
                .hasMessageContaining("'strin'");
        assertThatThrownBy(() -> grammar("{\"$defs\": {\"T\": {\"type\": \"array\", \"items\": {\"$ref\": "
                + "\"#/$defs/T\"}}}, \"$ref\": \"#/$defs/T\"}")).isInstanceOf(MoeException.class)
                .hasMessageContaining("recursive");
        assertThatThrownBy(() -> grammar("{\"type\": \"array\", \"maxItems\": 1, \"minItems\": 2}"))
                .isInstanceOf(MoeException.class).hasMessageContaining("2 items");
    }

    @Test
    void minBytesIsTheShortestCompletion() {
        JsonGrammar g = grammar("""
                {"type": "object", "properties": {"a": {"type": "string"}, "bb": {"type": "array",
                 "items": {"type": "integer"}, "minItems": 2}}, "required": ["a", "bb"]}""");
        JsonMatcher m = new JsonMatcher(g);
        String shortest = "{\"a\":\"\",\"bb\":[0,0]}";
        assertThat(m.minBytesToComplete()).isEqualTo(shortest.length());
        assertThat(g.minLength()).isEqualTo(shortest.length());
        // along the shortest text the bound falls by one a byte
        byte[] b = shortest.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < b.length; i++) {
            assertThat(m.accept(new byte[] {b[i]})).isTrue();
            assertThat(m.minBytesToComplete()).as("after %d bytes", i + 1).isEqualTo(b.length - i - 1);
        }
        assertThat(m.isComplete()).isTrue();
    }

    static JsonNode parse(String s) throws java.io.IOException {
        return JSON.readTree(s);
    }
}
