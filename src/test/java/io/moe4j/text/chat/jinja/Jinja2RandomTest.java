package io.moe4j.text.chat.jinja;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import io.moe4j.text.chat.JsonValues;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Differential check against jinja2 3.1.6 in transformers' environment: {@code jinja2-random.jsonl} holds
 * templates glued at random from {@link JinjaFuzzTest}'s fragments (tags, comments, filters, slicing ... in odd
 * combinations); {@code jinja2-random-blocks.jsonl} random well-nested if/for/set/macro blocks with random
 * whitespace around them and random {@code -}/{@code +} markers (trim_blocks and lstrip_blocks at work). Each
 * line holds what jinja2 rendered, or that it failed. The engine must render the same text, and fail where
 * jinja2 failed.
 */
class Jinja2RandomTest {
    @Test
    void randomFragmentsRenderAsJinja2() throws IOException {
        check("jinja2-random.jsonl", 1000, 50);
    }

    @Test
    void randomBlocksAndWhitespaceRenderAsJinja2() throws IOException {
        check("jinja2-random-blocks.jsonl", 500, 50);
    }

    @SuppressWarnings("unchecked")
    private static void check(String resource, int minTexts, int minErrors) throws IOException {
        ObjectMapper json = new ObjectMapper();
        List<JsonNode> lines = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(
                Jinja2RandomTest.class.getResourceAsStream(resource), StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                lines.add(json.readTree(line));
            }
        }
        Map<String, Object> vars = (Map<String, Object>) JsonValues.toTemplateValue(lines.get(0).get("variables"));
        List<String> mismatches = new ArrayList<>();
        int texts = 0;
        int errors = 0;
        for (JsonNode c : lines.subList(1, lines.size())) {
            String source = c.get("template").asText();
            String got;
            try {
                got = JinjaTemplate.parse(source, "random").render(vars, Clock.systemUTC());
            } catch (MoeException e) {
                got = null;
            }
            if (c.has("text")) {
                texts++;
                if (!c.get("text").asText().equals(got)) {
                    mismatches.add(json.writeValueAsString(source) + " -> jinja2 " + json.writeValueAsString(c.get("text"))
                            + ", here " + (got == null ? "an error" : json.writeValueAsString(got)));
                }
            } else {
                errors++;
                if (got != null) {
                    mismatches.add(json.writeValueAsString(source) + " -> jinja2 " + c.get("error").asText()
                            + ", here " + json.writeValueAsString(got));
                }
            }
        }
        assertThat(texts).isGreaterThan(minTexts);
        assertThat(errors).isGreaterThan(minErrors);
        assertThat(mismatches).as(String.join("\n", mismatches)).isEmpty();
    }
}
