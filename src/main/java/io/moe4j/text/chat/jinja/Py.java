package io.moe4j.text.chat.jinja;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Python semantics of template values: truthiness, {@code str()} and {@code repr()}, equality, ordering,
 * arithmetic, {@code in}, {@code len} and iteration. Values are Java objects standing for Python ones: null is
 * None, Boolean, Long (int), Double (float), String, List (list; {@link PyTuple} for tuples), Map (dict, in
 * insertion order), {@link Undefined}, {@link Namespace}, {@link LoopState} and {@link JinjaCallable}.
 * Strings are indexed and measured in code points, as Python's are.
 */
final class Py {
    private Py() {
    }

    // ---- whitespace, as Python's str.isspace ----

    static boolean isSpace(char c) {
        return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == '\u0085';
    }

    static boolean isAllSpace(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (!isSpace(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    private static boolean stripped(char c, String chars) {
        return chars == null ? isSpace(c) : chars.indexOf(c) >= 0;
    }

    static String lstrip(String s, String chars) {
        int i = 0;
        while (i < s.length() && stripped(s.charAt(i), chars)) {
            i++;
        }
        return s.substring(i);
    }

    static String rstrip(String s, String chars) {
        int i = s.length();
        while (i > 0 && stripped(s.charAt(i - 1), chars)) {
            i--;
        }
        return s.substring(0, i);
    }

    static String strip(String s, String chars) {
        return lstrip(rstrip(s, chars), chars);
    }

    // ---- truth and types ----

    static boolean truthy(Object v) {
        return switch (v) {
            case null -> false;
            case Boolean b -> b;
            case Long l -> l != 0;
            case java.math.BigInteger b -> b.signum() != 0;
            case Double d -> d != 0.0;
            case String s -> !s.isEmpty();
            case List<?> l -> !l.isEmpty();
            case Map<?, ?> m -> !m.isEmpty();
            case Undefined u -> false;
            default -> true;
        };
    }

    static String typeName(Object v) {
        return switch (v) {
            case null -> "NoneType";
            case Boolean b -> "bool";
            case Long l -> "int";
            case java.math.BigInteger b -> "int";
            case Double d -> "float";
            case String s -> "str";
            case PyTuple t -> "tuple";
            case PyRange r -> "range";
            case PyDictView dv -> dv.kind();
            case List<?> l -> "list";
            case Map<?, ?> m -> "dict";
            case Undefined u -> "Undefined";
            case Namespace n -> "Namespace";
            case LoopState l -> "LoopContext";
            case JinjaCallable c -> "function";
            default -> v.getClass().getSimpleName();
        };
    }

    static boolean isNumber(Object v) {
        return v instanceof Long || v instanceof Double || v instanceof Boolean;
    }

    static boolean isInteger(Object v) {
        return v instanceof Long || v instanceof Boolean;
    }

    static long toLong(Object v) {
        return v instanceof Boolean b ? (b ? 1 : 0) : ((Number) v).longValue();
    }

    static double toDouble(Object v) {
        return v instanceof Boolean b ? (b ? 1 : 0) : ((Number) v).doubleValue();
    }

    // ---- str() and repr() ----

    /** Python's {@code str(v)}, which is what {@code {{ v }}} prints (Undefined prints as nothing). */
    static String str(Object v) {
        return switch (v) {
            case null -> "None";
            case String s -> s;
            case Undefined u -> "";
            default -> repr(v);
        };
    }

    static String repr(Object v) {
        return switch (v) {
            case null -> "None";
            case Boolean b -> b ? "True" : "False";
            case Long l -> l.toString();
            case java.math.BigInteger b -> b.toString();
            case Double d -> floatRepr(d);
            case String s -> stringRepr(s);
            case PyTuple t -> t.size() == 1 ? "(" + repr(t.get(0)) + ",)" : joinRepr(t, "(", ")");
            case PyRange r -> r.toString();
            case PyDictView dv -> dv.kind() + "(" + joinRepr(dv, "[", "]") + ")";
            case List<?> l -> joinRepr(l, "[", "]");
            case Map<?, ?> m -> {
                StringBuilder sb = new StringBuilder("{");
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) {
                        sb.append(", ");
                    }
                    first = false;
                    sb.append(repr(e.getKey())).append(": ").append(repr(e.getValue()));
                }
                yield sb.append('}').toString();
            }
            case Undefined u -> "";
            default -> v.toString();
        };
    }

    private static String joinRepr(List<?> l, String open, String close) {
        StringBuilder sb = new StringBuilder(open);
        for (int i = 0; i < l.size(); i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(repr(l.get(i)));
        }
        return sb.append(close).toString();
    }

    /** Python's string repr: single quotes unless the text holds a single quote and no double quote. */
    static String stringRepr(String s) {
        char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder sb = new StringBuilder(s.length() + 2).append(quote);
        s.codePoints().forEach(cp -> {
            switch (cp) {
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (cp == quote) {
                        sb.append('\\').append(quote);
                    } else if (printable(cp)) {
                        sb.appendCodePoint(cp);
                    } else if (cp < 0x100) {
                        sb.append(String.format("\\x%02x", cp));
                    } else if (cp < 0x10000) {
                        sb.append(String.format("\\u%04x", cp));
                    } else {
                        sb.append(String.format("\\U%08x", cp));
                    }
                }
            }
        });
        return sb.append(quote).toString();
    }

    private static boolean printable(int cp) {
        if (cp == ' ') {
            return true;
        }
        return switch (Character.getType(cp)) {
            case Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE,
                 Character.UNASSIGNED, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                 Character.SPACE_SEPARATOR -> false;
            default -> true;
        };
    }

    /** Python's float repr: the shortest digits that round-trip, fixed notation for exponents -4 to 15. */
    static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return 1 / d < 0 ? "-0.0" : "0.0";
        }
        // Double.toString gives the shortest round-tripping digits (JDK 19+); only the layout differs.
        BigDecimal b = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
        String digits = b.unscaledValue().toString();
        int decpt = digits.length() - b.scale();
        StringBuilder sb = new StringBuilder(d < 0 ? "-" : "");
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                sb.append("0.").append("0".repeat(-decpt)).append(digits);
            } else if (decpt >= digits.length()) {
                sb.append(digits).append("0".repeat(decpt - digits.length())).append(".0");
            } else {
                sb.append(digits, 0, decpt).append('.').append(digits.substring(decpt));
            }
        } else {
            sb.append(digits.charAt(0));
            if (digits.length() > 1) {
                sb.append('.').append(digits.substring(1));
            }
            int exp = decpt - 1;
            sb.append('e').append(exp < 0 ? '-' : '+');
            String e = Integer.toString(Math.abs(exp));
            sb.append(e.length() < 2 ? "0" + e : e);
        }
        return sb.toString();
    }

    // ---- equality and ordering ----

    static boolean equal(Object a, Object b) {
        if (a == b) {
            return true;
        }
        if (isNumber(a) && isNumber(b)) {
            if (isInteger(a) && isInteger(b)) {
                return toLong(a) == toLong(b);
            }
            return toDouble(a) == toDouble(b);
        }
        if (a instanceof List<?> x && b instanceof List<?> y) {
            if ((a instanceof PyTuple) != (b instanceof PyTuple) || (a instanceof PyRange) != (b instanceof PyRange)
                    || (a instanceof PyDictView) != (b instanceof PyDictView) || x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!equal(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (Map.Entry<?, ?> e : x.entrySet()) {
                if (!y.containsKey(e.getKey()) || !equal(e.getValue(), y.get(e.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Undefined && b instanceof Undefined) {
            return true;
        }
        return a != null && a.equals(b);
    }

    /** Python's ordering of two values; fails as Python does for types that do not order. */
    static int compare(Object a, Object b, String op) {
        if (isNumber(a) && isNumber(b)) {
            if (isInteger(a) && isInteger(b)) {
                return Long.compare(toLong(a), toLong(b));
            }
            return Double.compare(toDouble(a), toDouble(b));
        }
        if (a instanceof String x && b instanceof String y) {
            return compareCodePoints(x, y);
        }
        if (a instanceof List<?> x && b instanceof List<?> y) {
            for (int i = 0; i < Math.min(x.size(), y.size()); i++) {
                if (!equal(x.get(i), y.get(i))) {
                    return compare(x.get(i), y.get(i), op);
                }
            }
            return Integer.compare(x.size(), y.size());
        }
        if (a instanceof Undefined u) {
            throw u.fail();
        }
        if (b instanceof Undefined u) {
            throw u.fail();
        }
        throw new JinjaRuntimeException("'" + op + "' not supported between instances of '" + typeName(a)
                + "' and '" + typeName(b) + "'");
    }

    static int compareCodePoints(String x, String y) {
        int i = 0;
        int j = 0;
        while (i < x.length() && j < y.length()) {
            int a = x.codePointAt(i);
            int b = y.codePointAt(j);
            if (a != b) {
                return Integer.compare(a, b);
            }
            i += Character.charCount(a);
            j += Character.charCount(b);
        }
        return Boolean.compare(i < x.length(), j < y.length());
    }

    // ---- containers ----

    static boolean contains(Object container, Object item) {
        return switch (container) {
            case String s -> {
                if (item instanceof String t) {
                    yield s.contains(t);
                }
                if (item instanceof Undefined u) {
                    throw u.fail();
                }
                throw new JinjaRuntimeException("'in <string>' requires string as left operand, not " + typeName(item));
            }
            case List<?> l -> {
                for (Object o : l) {
                    if (equal(o, item)) {
                        yield true;
                    }
                }
                yield false;
            }
            case Map<?, ?> m -> {
                for (Object k : m.keySet()) {
                    if (equal(k, item)) {
                        yield true;
                    }
                }
                yield false;
            }
            case Undefined u -> false;
            case null -> throw new JinjaRuntimeException("argument of type 'NoneType' is not iterable");
            default -> throw new JinjaRuntimeException("argument of type '" + typeName(container) + "' is not iterable");
        };
    }

    static int len(Object v) {
        return switch (v) {
            case String s -> s.codePointCount(0, s.length());
            case List<?> l -> l.size();
            case Map<?, ?> m -> m.size();
            case Undefined u -> 0;
            case null -> throw new JinjaRuntimeException("object of type 'NoneType' has no len()");
            default -> throw new JinjaRuntimeException("object of type '" + typeName(v) + "' has no len()");
        };
    }

    /** Items a {@code for} loop walks: list items, dict keys, string characters; Undefined walks nothing. */
    static List<Object> iterate(Object v) {
        return switch (v) {
            case List<?> l -> new ArrayList<>(l);
            case Map<?, ?> m -> new ArrayList<>(m.keySet());
            case String s -> codePoints(s);
            case Undefined u -> List.of();
            case null -> throw new JinjaRuntimeException("'NoneType' object is not iterable");
            default -> throw new JinjaRuntimeException("'" + typeName(v) + "' object is not iterable");
        };
    }

    static List<Object> codePoints(String s) {
        List<Object> out = new ArrayList<>();
        s.codePoints().forEach(cp -> out.add(new String(Character.toChars(cp))));
        return out;
    }

    // ---- arithmetic ----

    static Object binary(String op, Object a, Object b) {
        if (a instanceof Undefined u) {
            throw u.fail();
        }
        if (b instanceof Undefined u) {
            throw u.fail();
        }
        if (isNumber(a) && isNumber(b)) {
            return numeric(op, a, b);
        }
        switch (op) {
            case "+" -> {
                if (a instanceof String x && b instanceof String y) {
                    return x + y;
                }
                if (a instanceof List<?> x && b instanceof List<?> y && (a instanceof PyTuple) == (b instanceof PyTuple)) {
                    List<Object> out = new ArrayList<>(x);
                    out.addAll(y);
                    return a instanceof PyTuple ? new PyTuple(out) : out;
                }
            }
            case "*" -> {
                if (a instanceof String || a instanceof List<?>) {
                    if (isInteger(b)) {
                        return repeat(a, toLong(b));
                    }
                } else if (isInteger(a) && (b instanceof String || b instanceof List<?>)) {
                    return repeat(b, toLong(a));
                }
            }
            case "%" -> {
                if (a instanceof String fmt) {
                    return PercentFormat.format(fmt, b);
                }
            }
            default -> { }
        }
        throw new JinjaRuntimeException("unsupported operand type(s) for " + op + ": '" + typeName(a) + "' and '"
                + typeName(b) + "'");
    }

    private static Object repeat(Object seq, long n) {
        if (seq instanceof String s) {
            return n <= 0 ? "" : s.repeat(Math.toIntExact(n));
        }
        List<Object> out = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            out.addAll((List<?>) seq);
        }
        return seq instanceof PyTuple ? new PyTuple(out) : out;
    }

    private static Object numeric(String op, Object a, Object b) {
        boolean ints = isInteger(a) && isInteger(b);
        try {
            if (ints) {
                long x = toLong(a);
                long y = toLong(b);
                return switch (op) {
                    case "+" -> Math.addExact(x, y);
                    case "-" -> Math.subtractExact(x, y);
                    case "*" -> Math.multiplyExact(x, y);
                    case "/" -> {
                        zeroCheck(y == 0, "division by zero");
                        yield (double) x / (double) y;
                    }
                    case "//" -> {
                        zeroCheck(y == 0, "integer division or modulo by zero");
                        yield Math.floorDiv(x, y);
                    }
                    case "%" -> {
                        zeroCheck(y == 0, "integer modulo by zero");
                        yield Math.floorMod(x, y);
                    }
                    case "**" -> y >= 0 ? (Object) powExact(x, y) : (Object) Math.pow(x, y);
                    default -> throw new IllegalStateException(op);
                };
            }
            double x = toDouble(a);
            double y = toDouble(b);
            return switch (op) {
                case "+" -> x + y;
                case "-" -> x - y;
                case "*" -> x * y;
                case "/" -> {
                    zeroCheck(y == 0, "float division by zero");
                    yield x / y;
                }
                case "//" -> {
                    zeroCheck(y == 0, "float floor division by zero");
                    yield Math.floor(x / y);
                }
                case "%" -> {
                    zeroCheck(y == 0, "float modulo");
                    double r = x % y;
                    yield r != 0 && (r < 0) != (y < 0) ? r + y : r;
                }
                case "**" -> Math.pow(x, y);
                default -> throw new IllegalStateException(op);
            };
        } catch (ArithmeticException e) {
            throw new JinjaRuntimeException("integer overflow in '" + op + "' (values beyond 64 bits are not supported)");
        }
    }

    private static void zeroCheck(boolean zero, String message) {
        if (zero) {
            throw new JinjaRuntimeException(message);
        }
    }

    private static long powExact(long x, long y) {
        long r = 1;
        for (long i = 0; i < y; i++) {
            r = Math.multiplyExact(r, x);
        }
        return r;
    }

    static Object negate(Object v) {
        if (v instanceof Double d) {
            return -d;
        }
        if (isInteger(v)) {
            return Math.negateExact(toLong(v));
        }
        if (v instanceof Undefined u) {
            throw u.fail();
        }
        throw new JinjaRuntimeException("bad operand type for unary -: '" + typeName(v) + "'");
    }
}
