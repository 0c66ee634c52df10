/**
 * A Jinja interpreter for chat templates, written to render exactly what transformers' {@code apply_chat_template}
 * renders (jinja2 3.1 in an {@code ImmutableSandboxedEnvironment} with {@code trim_blocks}, {@code lstrip_blocks},
 * the loop-controls extension, and transformers' {@code tojson}, {@code raise_exception} and
 * {@code strftime_now}).
 *
 * <p>Why an interpreter of its own rather than Jinjava: chat templates lean on Python semantics that a Java Jinja
 * engine does not share. Jinjava 2.8.2 renders DeepSeek-V3's template but not Qwen3's ({@code namespace(...)} with
 * keyword arguments, Python string methods, {@code [::-1]}) nor gpt-oss's (whitespace control inside macros), and
 * printing, truthiness, equality and {@code tojson} all follow Python here. The pipeline is {@code Lexer} (text and
 * tag tokens, whitespace rules) → {@code Parser} (statements and expressions with Jinja's precedence) →
 * {@code Renderer} (one walk per render, Jinja's scoping) with {@code Py} (Python value semantics), {@code Access}
 * (attribute and item lookup as the sandbox does it), {@code Methods}, {@code Filters} and {@code Tests}.
 *
 * <p>Supported: {@code {{ }}}, {@code {% %}}, {@code {# #}}, {@code -}/{@code +} markers, raw blocks; if/elif/else,
 * for (unpacking, inline {@code if}, {@code else}, {@code loop.*}, break/continue), set (names, tuples,
 * namespace attributes, block set with filters), macro with defaults, {@code caller()} and call blocks, filter
 * blocks, with, transformers' {@code generation} block; literals, tuples, lists, dicts, slicing with steps,
 * {@code in}, {@code is}, {@code ~}, arithmetic and chained comparisons; the filters and tests chat templates use
 * and the str/dict/list methods they call; the globals {@code range}, {@code dict}, {@code namespace},
 * {@code cycler}, {@code joiner}, {@code raise_exception} and {@code strftime_now}. Not supported (a clear error at parse time): include, import, extends,
 * blocks, recursive loops, {@code *args}/{@code **kwargs} in calls. Integers are 64-bit (an overflow is an
 * error, where Python would grow).
 */
package io.moe4j.text.chat.jinja;
