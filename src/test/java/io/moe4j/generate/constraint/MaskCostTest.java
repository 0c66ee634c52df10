package io.moe4j.generate.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The cost of one token mask on gpt-oss's 200k-token vocabulary at several points of a document. Checks what each
 * mask allows (so the timing is of a right answer) and prints the time; {@code MOE4J_BENCH=1} in the environment
 * times more repetitions.
 */
class MaskCostTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A place in a document: the schema (null: json_object), the text before it, minus its last {@code cut} bytes. */
    /** tool_choice "required" over three tools: a call that writes its arguments first keeps all three alive. */
    static final String TOOL_CHOICE = io.moe4j.text.tools.ToolChoiceSchema.required(read("""
            [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
               "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}},
             {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
               "properties": {"zone": {"type": "string"}, "h24": {"type": "boolean"}}}}},
             {"type": "function", "function": {"name": "ping"}}]""")).toString();

    /** Strings held to length bounds, a pattern and formats. */
    static final String RULES = """
            {"type": "object", "properties": {"note": {"type": "string", "maxLength": 200},
             "code": {"type": "string", "pattern": "[0-9]{3}"}, "when": {"type": "string", "format": "date-time"},
             "who": {"type": "string", "format": "email"}}}""";

    private static com.fasterxml.jackson.databind.JsonNode read(String json) {
        try {
            return JSON.readTree(json);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    record Point(String name, String schema, String prefix, int cut) {
        Point(String name, String schema, String prefix) {
            this(name, schema, prefix, 0);
        }

        byte[] bytes() {
            byte[] b = prefix.getBytes(StandardCharsets.UTF_8);
            return Arrays.copyOf(b, b.length - cut);
        }
    }

    @Test
    void maskCostAtPointsOfADocument() throws IOException {
        ByteLevelVocabulary vocabulary = ByteLevelVocabulary.cached("gpt-oss");
        long t0 = System.nanoTime();
        TokenTrie trie = new TokenTrie(vocabulary);
        long buildNanos = System.nanoTime() - t0;
        int eos = vocabulary.addedToken("<|return|>");
        int[] byteToken = singleByteTokens(vocabulary);
        String nested = ConstrainedSamplingTest.SCHEMAS[0];
        Point[] points = {
            new Point("start of the document", nested, ""),
            new Point("after '{' (a key)", nested, "{"),
            new Point("inside a key", nested, "{\"na"),
            new Point("after ':' (a string value)", nested, "{\"name\":"),
            new Point("inside a string", nested, "{\"name\":\"Ann Smith, "),
            new Point("inside a string, mid UTF-8", nested, "{\"name\":\"Ann \u20ac", 1),
            new Point("after a backslash", nested, "{\"name\":\"A\\"),
            new Point("inside a number", nested, "{\"address\":{\"zip\":12"),
            new Point("after a value", nested, "{\"name\":\"x\""),
            new Point("json_object: free key", null, "{\"ke"),
            new Point("json_object: value", null, "{\"k\":"),
            new Point("json_object: in a string", null, "{\"k\":\"some text"),
            new Point("tool_choice: arguments first", TOOL_CHOICE, "[{\"arguments\":{"),
            new Point("tool_choice: in an argument", TOOL_CHOICE, "[{\"arguments\":{\"city\":\"Par"),
            new Point("in a string, maxLength 200", RULES, "{\"note\":\"some text"),
            new Point("in a string, unanchored pattern", RULES, "{\"code\":\"some text"),
            new Point("in a date-time", RULES, "{\"when\":\"2026-11-2"),
            new Point("in an email", RULES, "{\"who\":\"ada.lovelace@exa"),
        };
        int reps = System.getenv("MOE4J_BENCH") != null ? 200 : 20;
        boolean[] mask = new boolean[201088]; // gpt-oss's padded model vocabulary
        StringBuilder table = new StringBuilder();
        table.append(String.format("vocabulary %d tokens, trie %d nodes, built in %.0f ms%n", vocabulary.size(),
                trie.nodeCount(), buildNanos / 1e6));
        table.append(String.format("%-32s %10s %10s %10s %12s%n", "point", "allowed", "nodes", "median ms",
                "min ms"));
        for (int pass = 0; pass < 2; pass++) {
        for (Point p : points) {
            JsonGrammar grammar = p.schema() == null ? JsonGrammar.anyObject()
                    : JsonGrammar.of(JSON.readTree(p.schema()));
            JsonConstraint c = new JsonConstraint(grammar, trie, vocabulary, eos);
            byte[] prefix = p.bytes();
            for (byte b : prefix) {
                c.accept(byteToken[b & 0xFF]);
            }
            long[] nanos = new long[reps];
            for (int warm = 0; warm < reps; warm++) {
                c.fillAllowed(mask, 1000);
            }
            for (int r = 0; r < reps; r++) {
                long s = System.nanoTime();
                c.fillAllowed(mask, 1000);
                nanos[r] = System.nanoTime() - s;
            }
            Arrays.sort(nanos);
            int allowed = 0;
            for (boolean a : mask) {
                allowed += a ? 1 : 0;
            }
            // what was allowed must each continue the prefix (a sample of them checked byte by byte)
            JsonMatcher matcher = new JsonMatcher(grammar);
            assertThat(matcher.accept(prefix)).isTrue();
            int checked = 0;
            for (int id = 0; id < mask.length && checked < 500; id++) {
                if (mask[id] && id != eos) {
                    JsonMatcher m = new JsonMatcher(grammar);
                    m.accept(prefix);
                    assertThat(m.accept(vocabulary.bytes(id))).as(p.name() + " token " + id).isTrue();
                    checked++;
                }
            }
            assertThat(allowed).as(p.name()).isPositive();
            if (pass == 1) { // the first pass warms the code up
                table.append(String.format("%-32s %10d %10d %10.3f %12.3f%n", p.name(), allowed,
                        c.lastVisitedNodes(), nanos[reps / 2] / 1e6, nanos[0] / 1e6));
            }
        }
        }
        for (int i = 0; i < ConstrainedSamplingTest.SCHEMAS.length; i++) {
            com.fasterxml.jackson.databind.JsonNode schema = JSON.readTree(ConstrainedSamplingTest.SCHEMAS[i]);
            int bytes = new JsonConstraint(JsonGrammar.of(schema), trie, vocabulary, eos).minTokens();
            int tokens = new JsonConstraint(JsonGrammar.of(schema, trie), trie, vocabulary, eos).minTokens();
            assertThat(tokens).isLessThanOrEqualTo(bytes);
            table.append(String.format("schema %d: minTokens %d reckoned in bytes, %d with pieces in tokens%n", i,
                    bytes, tokens));
        }
        System.out.print(table);
    }

    static int[] singleByteTokens(TokenVocabulary vocabulary) {
        int[] ids = new int[256];
        Arrays.fill(ids, -1);
        for (int id = 0; id < vocabulary.size(); id++) {
            byte[] b = vocabulary.bytes(id);
            if (b.length == 1 && !vocabulary.isSpecial(id) && ids[b[0] & 0xFF] < 0) {
                ids[b[0] & 0xFF] = id;
            }
        }
        return ids;
    }
}
