package io.moe4j.text.chat.jinja;

import java.util.List;

/** Expression nodes; each keeps the template line it starts on for error messages. */
sealed interface Expr {
    int line();

    record Const(Object value, int line) implements Expr { }

    record Name(String name, int line) implements Expr { }

    record ListLit(List<Expr> items, boolean tuple, int line) implements Expr { }

    record DictLit(List<Expr> keys, List<Expr> values, int line) implements Expr { }

    record GetAttr(Expr target, String name, int line) implements Expr { }

    record GetItem(Expr target, Expr key, int line) implements Expr { }

    /** {@code target[start:stop:step]}; absent parts are null. */
    record Slice(Expr target, Expr start, Expr stop, Expr step, int line) implements Expr { }

    record Call(Expr callee, Args args, int line) implements Expr { }

    /** {@code value | name(args)}. */
    record Filter(Expr value, String name, Args args, int line) implements Expr { }

    /** {@code value is [not] name(args)}. */
    record Test(Expr value, String name, Args args, boolean negated, int line) implements Expr { }

    record Unary(String op, Expr operand, int line) implements Expr { }

    record Binary(String op, Expr left, Expr right, int line) implements Expr { }

    /** {@code and} / {@code or}, which return one of their operands as Python does. */
    record Logical(boolean and, Expr left, Expr right, int line) implements Expr { }

    record Not(Expr operand, int line) implements Expr { }

    /** A chain such as {@code a < b <= c}: {@code ops.get(i)} compares operand i with operand i + 1. */
    record Compare(List<Expr> operands, List<String> ops, int line) implements Expr { }

    record Concat(List<Expr> parts, int line) implements Expr { }

    /** {@code then if condition else otherwise}; a missing else is Undefined. */
    record Conditional(Expr condition, Expr then, Expr otherwise, int line) implements Expr { }

    /** Call arguments: positional, then keyword names with their values. */
    record Args(List<Expr> positional, List<String> names, List<Expr> named) {
        static final Args NONE = new Args(List.of(), List.of(), List.of());
    }
}
