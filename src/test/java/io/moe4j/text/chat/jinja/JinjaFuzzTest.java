package io.moe4j.text.chat.jinja;

import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/** Random templates built from real template fragments either render or fail with one MoeException, never crash. */
class JinjaFuzzTest {
    private static final String[] FRAGMENTS = {
        "{{ ", " }}", "{%- ", " -%}", "{% ", " %}", "{#", "#}", "{%+", "+%}", "if ", "elif ", "else", "endif", "for ",
        " in ", "endfor", "set ", " = ", "macro ", "endmacro", "call ", "endcall", "raw", "endraw", "break", "continue",
        "namespace(", "x=1", ")", "(", "[", "]", "{", "}", "::-1", ":", ",", ".", "|", " is ", "not ", "defined",
        "none", "string", "tojson", "length", "trim", "join", "items()", "messages", "m", "m.content", "m.role",
        "loop.index0", "loop.last", "'<|im_start|>'", "\"\\n\"", "'a' ~ ", " + ", " - ", " * ", " / ", " // ",
        " % ", "**", " == ", " != ", " < ", " and ", " or ", "1", "0", "-1", "2.5", "true", "false", "ns", "ns.x",
        "raise_exception('no')", "strftime_now('%Y')", "\n", "  ", "text", "-", "+", "~", "\"", "'", "\\", "{{", "}}",
        "startswith('<')", "split('</think>')", "[-1]", "[0]", "tools", "caller()", "range(3)", "selectattr('role')",
    };

    @Test
    void randomTemplatesNeverCrash() {
        Random random = new Random(42);
        Map<String, Object> vars = new LinkedHashMap<>();
        List<Object> messages = new ArrayList<>();
        messages.add(new LinkedHashMap<>(Map.of("role", "user", "content", "<tool_response>x</tool_response>")));
        messages.add(new LinkedHashMap<>(Map.of("role", "assistant", "content", "<think>a</think>b")));
        vars.put("messages", messages);
        vars.put("tools", null);
        int rendered = 0;
        int refused = 0;
        for (int i = 0; i < 20_000; i++) {
            StringBuilder sb = new StringBuilder();
            int n = 1 + random.nextInt(14);
            for (int k = 0; k < n; k++) {
                sb.append(FRAGMENTS[random.nextInt(FRAGMENTS.length)]);
            }
            String source = sb.toString();
            try {
                String out = JinjaTemplate.parse(source, "fuzz").render(vars, Clock.systemUTC());
                assertThat(out).isNotNull();
                rendered++;
            } catch (MoeException e) {
                assertThat(e.getMessage()).startsWith("template fuzz line ");
                // The renderer's last-resort wrapping of unexpected Java exceptions must never be needed.
                if (e.getMessage().contains("cannot render (")) {
                    fail("template " + source.replace("\n", "\\n") + " hit an engine bug: " + e.getMessage(), e);
                }
                refused++;
            } catch (Throwable t) {
                fail("template " + source.replace("\n", "\\n") + " crashed with " + t, t);
            }
        }
        // Both outcomes must actually occur for the test to mean anything.
        assertThat(rendered).isGreaterThan(500);
        assertThat(refused).isGreaterThan(500);
    }
}
