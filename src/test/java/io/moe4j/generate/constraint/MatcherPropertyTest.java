package io.moe4j.generate.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Both directions of "the matcher accepts exactly the documents the schema allows", on random documents: values
 * drawn from each schema (by a generator written from the schema's meaning, not from the compiler) are accepted
 * compact and pretty-printed; random edits of them that the matcher still accepts parse and validate.
 */
class MatcherPropertyTest {
    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final String[] STRINGS = {"", "a", "Paris", "say \"hi\"", "back\\slash", "tab\tnew\nline",
        "\u0001\u001f ctl", "caf\u00e9 \u20ac \u2603", "emoji \ud83d\ude00", "/slash/", "\u0000nul", "\u007f del"};
    private static final char[] EDITS = "{}[]\",:0123456789-+.eEtrufalsn \\\n\"ab\u00e9".toCharArray();

    @Test
    void generatedDocumentsAreAcceptedAndAcceptedEditsAreValid() throws IOException {
        SplittableRandom random = new SplittableRandom(2026);
        int accepted = 0;
        int editsAccepted = 0;
        for (String text : ConstrainedSamplingTest.SCHEMAS) {
            JsonNode schema = JSON.readTree(text);
            JsonGrammar compact = JsonGrammar.of(schema, 0);
            JsonGrammar pretty = JsonGrammar.of(schema, 16);
            for (int i = 0; i < 200; i++) {
                JsonNode value = generate(schema, random, 0);
                assertThat(SubsetValidator.validate(schema, value)).as("generator: " + value).isNull();
                String doc = JSON.writeValueAsString(value);
                assertThat(JsonMatcher.matches(compact, doc)).as(doc).isTrue();
                String printed = JSON.writerWithDefaultPrettyPrinter().writeValueAsString(value);
                assertThat(JsonMatcher.matches(pretty, printed)).as(printed).isTrue();
                accepted++;
                for (int e = 0; e < 20; e++) {
                    String edited = edit(doc, random);
                    if (JsonMatcher.matches(compact, edited)) {
                        JsonNode parsed = parse(edited);
                        assertThat(parsed).as("accepted but not JSON: " + edited).isNotNull();
                        assertThat(SubsetValidator.validate(schema, parsed)).as(edited).isNull();
                        editsAccepted++;
                    }
                }
            }
        }
        assertThat(accepted).isEqualTo(200 * ConstrainedSamplingTest.SCHEMAS.length);
        assertThat(editsAccepted).isPositive(); // some edits keep a document valid (digits, string content)
    }

    private static JsonNode parse(String text) {
        try {
            return JSON.readTree(text);
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    private static String edit(String doc, SplittableRandom random) {
        StringBuilder b = new StringBuilder(doc);
        int edits = 1 + random.nextInt(2);
        for (int k = 0; k < edits; k++) {
            int at = random.nextInt(b.length() + 1);
            char c = EDITS[random.nextInt(EDITS.length)];
            switch (random.nextInt(3)) {
                case 0 -> b.insert(at, c);
                case 1 -> {
                    if (at < b.length()) {
                        b.deleteCharAt(at);
                    }
                }
                default -> {
                    if (at < b.length()) {
                        b.setCharAt(at, c);
                    }
                }
            }
        }
        return b.toString();
    }

    /** A random value that the schema allows (for the keywords the constraint supports). */
    static JsonNode generate(JsonNode s, SplittableRandom r, int depth) {
        if (s.has("const")) {
            return s.get("const");
        }
        if (s.has("enum")) {
            return s.get("enum").get(r.nextInt(s.get("enum").size()));
        }
        if (s.has("anyOf")) {
            return generate(s.get("anyOf").get(r.nextInt(s.get("anyOf").size())), r, depth);
        }
        JsonNode type = s.get("type");
        String t = type == null ? "object" : type.isArray() ? type.get(r.nextInt(type.size())).asText()
                : type.asText();
        return switch (t) {
            case "object" -> object(s, r, depth);
            case "array" -> array(s, r, depth);
            case "string" -> NODES.textNode(STRINGS[r.nextInt(STRINGS.length)]
                    + (r.nextBoolean() ? "" : Integer.toString(r.nextInt(1000))));
            case "integer" -> NODES.numberNode(r.nextBoolean() ? r.nextInt(-100, 100) : r.nextLong());
            case "number" -> switch (r.nextInt(3)) {
                case 0 -> NODES.numberNode(r.nextInt(-1000, 1000));
                case 1 -> NODES.numberNode((r.nextDouble() - 0.5) * Math.pow(10, r.nextInt(-12, 12)));
                default -> NODES.numberNode(r.nextDouble());
            };
            case "boolean" -> NODES.booleanNode(r.nextBoolean());
            default -> NODES.nullNode();
        };
    }

    private static ObjectNode object(JsonNode s, SplittableRandom r, int depth) {
        List<String> keys = new ArrayList<>();
        List<String> required = new ArrayList<>();
        s.path("required").forEach(n -> required.add(n.asText()));
        for (Iterator<Map.Entry<String, JsonNode>> it = s.path("properties").fields(); it.hasNext(); ) {
            String k = it.next().getKey();
            if (required.contains(k) || r.nextBoolean()) {
                keys.add(k);
            }
        }
        Collections.shuffle(keys, new java.util.Random(r.nextLong()));
        ObjectNode o = NODES.objectNode();
        for (String k : keys) {
            o.set(k, generate(s.get("properties").get(k), r, depth + 1));
        }
        return o;
    }

    private static ArrayNode array(JsonNode s, SplittableRandom r, int depth) {
        int min = s.path("minItems").asInt(0);
        int max = s.has("maxItems") ? s.get("maxItems").asInt() : min + 3;
        int n = min + r.nextInt(Math.max(1, Math.min(max, min + 3) - min + 1));
        ArrayNode a = NODES.arrayNode();
        JsonNode prefix = s.path("prefixItems");
        for (int i = 0; i < n; i++) {
            JsonNode item = i < prefix.size() ? prefix.get(i) : s.get("items");
            a.add(item == null ? NODES.numberNode(i) : generate(item, r, depth + 1));
        }
        return a;
    }
}
