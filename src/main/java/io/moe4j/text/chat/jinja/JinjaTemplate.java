package io.moe4j.text.chat.jinja;

import java.time.Clock;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Jinja template as transformers renders chat templates: the Jinja subset chat templates use, with
 * {@code trim_blocks} and {@code lstrip_blocks}, loop controls, Python semantics for values and methods,
 * transformers' {@code tojson}, and the globals {@code raise_exception} and {@code strftime_now}.
 * Parsing happens once; {@link #render} may be called any number of times, from any thread.
 *
 * <p>Variables are plain Java values standing for Python ones: null, Boolean, Long, Double, String, List and Map
 * (see {@link io.moe4j.text.chat.JsonValues} for JSON). A template that does not parse fails here with a
 * {@link JinjaSyntaxException} naming the template and line.
 */
public final class JinjaTemplate {
    private final String name;
    private final String source;
    private final List<Stmt> body;

    private JinjaTemplate(String name, String source, List<Stmt> body) {
        this.name = name;
        this.source = source;
        this.body = body;
    }

    /** Parses {@code source}; {@code name} (a file path, say) appears in every error message. */
    public static JinjaTemplate parse(String source, String name) {
        List<Token> tokens = new Lexer(source, name).tokenize();
        return new JinjaTemplate(name, source, new Parser(tokens, name).parseTemplate());
    }

    public String name() {
        return name;
    }

    public String source() {
        return source;
    }

    /**
     * Renders with the given variables; {@code strftime_now} reads {@code clock} in its zone.
     *
     * @throws TemplateRaisedException when the template calls {@code raise_exception}
     * @throws io.moe4j.MoeException for any other error, naming the template and line
     */
    public String render(Map<String, ?> variables, Clock clock) {
        Map<String, Object> globals = new HashMap<>();
        globals.put("raise_exception", (JinjaCallable) (args, kwargs) -> {
            throw new Renderer.RaisedByTemplate(args.isEmpty() ? "" : Py.str(args.get(0)));
        });
        globals.put("strftime_now", (JinjaCallable) (args, kwargs) -> {
            Arguments a = new Arguments("strftime_now", args, kwargs);
            String format = a.string(a.required(0, "format"));
            a.done();
            return Strftime.format(LocalDateTime.now(clock), format);
        });
        globals.put("namespace", (JinjaCallable) (args, kwargs) -> {
            Namespace ns = new Namespace();
            for (Object a : args) {
                if (!(a instanceof Map<?, ?> m)) {
                    throw new JinjaRuntimeException("namespace() takes a mapping or keyword arguments, not "
                            + Py.typeName(a));
                }
                m.forEach((k, v) -> ns.attributes.put(Py.str(k), v));
            }
            ns.attributes.putAll(kwargs);
            return ns;
        });
        globals.put("range", (JinjaCallable) (args, kwargs) -> range(args));
        globals.put("joiner", (JinjaCallable) (args, kwargs) -> {
            Arguments a = new Arguments("joiner", args, kwargs);
            String sep = a.string(a.optional(0, "sep", ", "));
            a.done();
            boolean[] used = {false};
            return (JinjaCallable) (x, y) -> {
                if (used[0]) {
                    return sep;
                }
                used[0] = true;
                return "";
            };
        });
        globals.put("cycler", (JinjaCallable) (args, kwargs) -> {
            if (args.isEmpty()) {
                throw new JinjaRuntimeException("at least one item has to be provided");
            }
            return new Cycler(args);
        });
        globals.put("dict", (JinjaCallable) (args, kwargs) -> {
            Map<Object, Object> m = new LinkedHashMap<>();
            for (Object a : args) {
                if (a instanceof Map<?, ?> src) {
                    m.putAll(src);
                } else {
                    for (Object pair : Py.iterate(a)) {
                        List<Object> kv = Py.iterate(pair);
                        m.put(kv.get(0), kv.get(1));
                    }
                }
            }
            m.putAll(kwargs);
            return m;
        });
        Map<String, Object> vars = new LinkedHashMap<>(variables);
        return new Renderer(name, globals).render(body, vars);
    }

    private static Object range(List<Object> args) {
        for (Object a : args) {
            if (!Py.isInteger(a)) {
                throw new JinjaRuntimeException("range() needs integers, not " + Py.typeName(a));
            }
        }
        long start = 0;
        long stop;
        long step = 1;
        switch (args.size()) {
            case 1 -> stop = Py.toLong(args.get(0));
            case 2 -> {
                start = Py.toLong(args.get(0));
                stop = Py.toLong(args.get(1));
            }
            case 3 -> {
                start = Py.toLong(args.get(0));
                stop = Py.toLong(args.get(1));
                step = Py.toLong(args.get(2));
            }
            default -> throw new JinjaRuntimeException("range expected 1 to 3 arguments, got " + args.size());
        }
        if (step == 0) {
            throw new JinjaRuntimeException("range() arg 3 must not be zero");
        }
        long size = step > 0 ? Math.max(0, (stop - start + step - 1) / step) : Math.max(0, (start - stop - step - 1) / -step);
        if (size > 100_000) {
            // Jinja's sandbox refuses ranges over 100000 items (MAX_RANGE) as well.
            throw new JinjaRuntimeException("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        }
        return new PyRange(start, stop, step, (int) size);
    }
}
