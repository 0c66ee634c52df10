package io.moe4j.text.chat.jinja;

import java.util.List;

/** Statement nodes of a parsed template. */
sealed interface Stmt {
    int line();

    record Text(String text, int line) implements Stmt { }

    record Print(Expr value, int line) implements Stmt { }

    record If(List<Expr> conditions, List<List<Stmt>> bodies, List<Stmt> otherwise, int line) implements Stmt { }

    /** {@code for targets in iterable [if filter]}; several targets unpack each item. */
    record For(List<String> targets, Expr iterable, Expr filter, List<Stmt> body, List<Stmt> otherwise, int line)
            implements Stmt { }

    /** {@code set a = v}, {@code set a, b = v}, or {@code set ns.attr = v} (attribute non-null). */
    record Set(List<String> targets, String attribute, Expr value, int line) implements Stmt { }

    /** {@code set name | filters %}body{% endset}}; filters apply to the rendered body, in order. */
    record SetBlock(String target, List<Expr.Filter> filters, List<Stmt> body, int line) implements Stmt { }

    record Macro(String name, List<String> params, List<Expr> defaults, List<Stmt> body, int line) implements Stmt { }

    /** {@code call(params) macro(args) %}body{% endcall}}: the body becomes the macro's {@code caller()}. */
    record CallBlock(Expr.Call call, List<String> params, List<Expr> defaults, List<Stmt> body, int line)
            implements Stmt { }

    record FilterBlock(List<Expr.Filter> filters, List<Stmt> body, int line) implements Stmt { }

    /** {@code with a = 1, b = 2 %}body{% endwith}}: the names exist only inside the body. */
    record With(List<String> names, List<Expr> values, List<Stmt> body, int line) implements Stmt { }

    record Break(int line) implements Stmt { }

    record Continue(int line) implements Stmt { }
}
