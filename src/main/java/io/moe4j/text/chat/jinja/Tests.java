package io.moe4j.text.chat.jinja;

import java.util.List;
import java.util.Map;
import java.util.Set;

/** Jinja's tests ({@code x is defined}, {@code x is string} ...) with Python's type rules. */
final class Tests {
    private static final Set<String> NAMES = Set.of(
            "defined", "undefined", "none", "boolean", "false", "true", "integer", "float", "number", "string",
            "mapping", "iterable", "sequence", "callable", "sameas", "escaped", "in", "eq", "equalto", "==", "ne",
            "!=", "lt", "lessthan", "<", "le", "<=", "gt", "greaterthan", ">", "ge", ">=", "odd", "even",
            "divisibleby", "lower", "upper", "filter", "test");

    private Tests() {
    }

    static boolean exists(String name) {
        return NAMES.contains(name);
    }

    static boolean apply(String name, Object v, List<Object> args, Map<String, Object> kwargs) {
        Arguments a = new Arguments(name, args, kwargs);
        boolean result = switch (name) {
            case "defined" -> !(v instanceof Undefined);
            case "undefined" -> v instanceof Undefined;
            case "none" -> v == null;
            case "boolean" -> v instanceof Boolean;
            case "false" -> Boolean.FALSE.equals(v);
            case "true" -> Boolean.TRUE.equals(v);
            case "integer" -> v instanceof Long;
            case "float" -> v instanceof Double;
            case "number" -> Py.isNumber(v);
            case "string" -> v instanceof String;
            case "mapping" -> v instanceof Map<?, ?>;
            case "iterable" -> v instanceof String || v instanceof List<?> || v instanceof Map<?, ?> || v instanceof Undefined;
            case "sequence" -> v instanceof String || v instanceof List<?> || v instanceof Map<?, ?> || v instanceof Undefined;
            case "callable" -> v instanceof JinjaCallable;
            case "escaped" -> false;
            case "sameas" -> {
                Object other = a.required(0, "other");
                yield v == other || (v instanceof Boolean && v.equals(other));
            }
            case "in" -> Py.contains(a.required(0, "seq"), v);
            case "eq", "equalto", "==" -> Py.equal(v, a.required(0, "other"));
            case "ne", "!=" -> !Py.equal(v, a.required(0, "other"));
            case "lt", "lessthan", "<" -> Py.compare(v, a.required(0, "other"), "<") < 0;
            case "le", "<=" -> Py.compare(v, a.required(0, "other"), "<=") <= 0;
            case "gt", "greaterthan", ">" -> Py.compare(v, a.required(0, "other"), ">") > 0;
            case "ge", ">=" -> Py.compare(v, a.required(0, "other"), ">=") >= 0;
            case "odd" -> integer(v, name) % 2 != 0;
            case "even" -> integer(v, name) % 2 == 0;
            case "divisibleby" -> {
                long d = integer(a.required(0, "num"), name);
                if (d == 0) {
                    throw new JinjaRuntimeException("integer division or modulo by zero");
                }
                yield integer(v, name) % d == 0;
            }
            case "lower" -> Py.str(v).equals(Py.str(v).toLowerCase(java.util.Locale.ROOT));
            case "upper" -> Py.str(v).equals(Py.str(v).toUpperCase(java.util.Locale.ROOT));
            case "filter" -> v instanceof String s && Filters.exists(s);
            case "test" -> v instanceof String s && exists(s);
            default -> throw new JinjaRuntimeException("no test named '" + name + "'");
        };
        a.done();
        return result;
    }

    private static long integer(Object v, String test) {
        if (v instanceof Undefined u) {
            throw u.fail();
        }
        if (!Py.isInteger(v)) {
            throw new JinjaRuntimeException("test '" + test + "' needs an integer, not " + Py.typeName(v));
        }
        return Py.toLong(v);
    }
}
