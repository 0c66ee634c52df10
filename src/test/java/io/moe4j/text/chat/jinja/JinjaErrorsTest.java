package io.moe4j.text.chat.jinja;

import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Templates that do not parse or fail while rendering: one MoeException naming the template and the line. */
class JinjaErrorsTest {
    private static final Clock CLOCK = Clock.fixed(
            LocalDateTime.of(2026, 3, 7, 9, 5, 2).toInstant(ZoneOffset.UTC), ZoneOffset.UTC);

    private static String render(String source, Map<String, ?> vars) {
        return JinjaTemplate.parse(source, "t.jinja").render(vars, CLOCK);
    }

    private static void syntaxError(String source, int line, String fragment) {
        assertThatThrownBy(() -> JinjaTemplate.parse(source, "dir/chat_template.jinja"))
                .isInstanceOf(JinjaSyntaxException.class)
                .hasMessageContaining("dir/chat_template.jinja")
                .hasMessageContaining("line " + line)
                .hasMessageContaining(fragment)
                .satisfies(e -> assertThat(((JinjaSyntaxException) e).line()).isEqualTo(line));
    }

    @Test
    void syntaxErrorsNameTheTemplateAndLine() {
        syntaxError("a\n{% if x %}\nb\n", 3, "the 'if' block opened on line 2 is never closed");
        syntaxError("{% for x in y %}\n{% endif %}", 2, "unexpected 'endif': the innermost open block is 'for' (line 1)");
        syntaxError("{% endfor %}", 1, "no block is open");
        syntaxError("\n\n{{ x + }}", 3, "unexpected");
        syntaxError("{{ x | nosuchfilter }}", 1, "no filter named 'nosuchfilter'");
        syntaxError("\n{{ x is nosuchtest }}", 2, "no test named 'nosuchtest'");
        syntaxError("{% include 'other.jinja' %}", 1, "not supported");
        syntaxError("{% frobnicate %}", 1, "unknown tag 'frobnicate'");
        syntaxError("{{ 'unterminated }}", 1, "unterminated string");
        syntaxError("x\n{# never closed", 2, "unclosed comment");
        syntaxError("{{ x ", 1, "expected '}}'");
        syntaxError("{{ (1, 2 }}", 1, "unexpected");
        syntaxError("{{ x ) }}", 1, "unexpected ')'");
        syntaxError("{% set %}", 1, "expected name");
        syntaxError("{% raw %}never closed", 1, "endraw");
    }

    @Test
    void renderErrorsNameTheTemplateAndLine() {
        assertThatThrownBy(() -> render("ok\n\n{{ 'a' + 1 }}", Map.of()))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("t.jinja line 3")
                .hasMessageContaining("unsupported operand type(s) for +: 'str' and 'int'");
        assertThatThrownBy(() -> render("{% macro m() %}\n{{ nope.attr }}{% endmacro %}\n{{ m() }}", Map.of()))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("line 2")
                .hasMessageContaining("'nope' is undefined");
        assertThatThrownBy(() -> render("{{ messages.append(1) }}", Map.of("messages", new java.util.ArrayList<>())))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("immutable sandbox");
        assertThatThrownBy(() -> render("{% break %}", Map.of()))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("outside a for loop");
        assertThatThrownBy(() -> render("{% macro r() %}{{ r() }}{% endmacro %}{{ r() }}", Map.of()))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("recursion too deep");
    }

    @Test
    void raiseExceptionCarriesTheTemplatesMessage() {
        assertThatThrownBy(() -> render("\n{{ raise_exception('Conversation roles must alternate') }}", Map.of()))
                .isInstanceOf(TemplateRaisedException.class)
                .hasMessageContaining("t.jinja line 2")
                .hasMessageContaining("Conversation roles must alternate")
                .satisfies(e -> assertThat(((TemplateRaisedException) e).templateMessage())
                        .isEqualTo("Conversation roles must alternate"));
    }

    @Test
    void undefinedRendersEmptyAndFalsyAsJinjaUndefined() {
        assertThat(render("[{{ missing }}][{{ missing is defined }}][{% if missing %}y{% else %}n{% endif %}]"
                + "[{{ missing | length }}][{{ missing ~ 'x' }}][{{ missing | default('d') }}]", Map.of()))
                .isEqualTo("[][False][n][0][x][d]");
    }

    @Test
    void strftimeNowReadsTheInjectedClock() {
        assertThat(render("{{ strftime_now('%Y-%m-%d %H:%M:%S') }}|{{ strftime_now('%d %b %Y') }}|"
                + "{{ strftime_now('%-d %B %Y, %A %a %I%p %j %y %%') }}", Map.of()))
                .isEqualTo("2026-03-07 09:05:02|07 Mar 2026|7 March 2026, Saturday Sat 09AM 066 26 %");
    }

    @Test
    void renderIsRepeatableAndThreadSafe() throws Exception {
        JinjaTemplate t = JinjaTemplate.parse("{% set ns = namespace(n=0) %}{% for i in range(k) %}"
                + "{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", "t");
        var pool = java.util.concurrent.Executors.newFixedThreadPool(4);
        try {
            var futures = new java.util.ArrayList<java.util.concurrent.Future<String>>();
            for (long k = 0; k < 64; k++) {
                long kk = k;
                futures.add(pool.submit(() -> t.render(Map.of("k", kk), CLOCK)));
            }
            for (int k = 0; k < 64; k++) {
                assertThat(futures.get(k).get()).isEqualTo(Long.toString((long) k * (k - 1) / 2));
            }
        } finally {
            pool.shutdown();
        }
    }
}
