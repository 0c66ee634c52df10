package io.moe4j.text.chat.jinja;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import io.moe4j.text.chat.JsonValues;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Constructs of the engine against jinja2 3.1.6 in transformers' environment (5.18: ImmutableSandboxedEnvironment,
 * trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson and raise_exception). {@code jinja2-cases.jsonl}
 * was written by rendering each template there: its first line holds the variables, each further line a template
 * and the text jinja2 rendered, or the kind of error it raised ({@code raise}: raise_exception, with its message;
 * {@code undefined}: an UndefinedError; {@code other}: any other error).
 */
class Jinja2CasesTest {
    @SuppressWarnings("unchecked")
    @TestFactory
    List<DynamicTest> rendersAsJinja2() throws IOException {
        ObjectMapper json = new ObjectMapper();
        List<JsonNode> lines = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(
                Jinja2CasesTest.class.getResourceAsStream("jinja2-cases.jsonl"), StandardCharsets.UTF_8))) {
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                lines.add(json.readTree(line));
            }
        }
        Map<String, Object> vars = (Map<String, Object>) JsonValues.toTemplateValue(lines.get(0).get("variables"));
        assertThat(lines.size()).isGreaterThan(80);
        List<DynamicTest> tests = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            JsonNode c = lines.get(i);
            String source = c.get("template").asText();
            String name = "case " + i;
            tests.add(DynamicTest.dynamicTest(name + ": " + source.replace("\n", "\\n"), () -> {
                JinjaTemplate t = JinjaTemplate.parse(source, name);
                if (c.has("text")) {
                    assertThat(t.render(vars, Clock.systemUTC())).isEqualTo(c.get("text").asText());
                } else if (c.get("error").asText().equals("raise")) {
                    assertThatThrownBy(() -> t.render(vars, Clock.systemUTC()))
                            .isInstanceOf(TemplateRaisedException.class)
                            .satisfies(e -> assertThat(((TemplateRaisedException) e).templateMessage())
                                    .isEqualTo(c.get("message").asText()))
                            .hasMessageContaining(name).hasMessageContaining("line 1");
                } else {
                    assertThatThrownBy(() -> t.render(vars, Clock.systemUTC()))
                            .isInstanceOf(MoeException.class)
                            .isNotInstanceOf(TemplateRaisedException.class)
                            .hasMessageContaining(name).hasMessageContaining("line 1");
                }
            }));
        }
        return tests;
    }
}
