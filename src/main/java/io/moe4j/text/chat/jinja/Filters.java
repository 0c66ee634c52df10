package io.moe4j.text.chat.jinja;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/** Jinja's built-in filters that chat templates use, with transformers' own {@code tojson}. */
final class Filters {
    private static final Set<String> NAMES = Set.of(
            "abs", "attr", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape", "first",
            "float", "format", "indent", "int", "items", "join", "last", "length", "list", "lower", "map", "max",
            "min", "reject", "rejectattr", "replace", "reverse", "round", "safe", "select", "selectattr", "sort",
            "string", "sum", "title", "tojson", "trim", "unique", "upper", "wordcount", "pprint", "batch");
    private static final Pattern WORD_BEGINNING = Pattern.compile("([-\\s({\\[<]+)");

    private Filters() {
    }

    static boolean exists(String name) {
        return NAMES.contains(name);
    }

    static Object apply(String name, Object v, List<Object> args, Map<String, Object> kwargs) {
        Arguments a = new Arguments(name, args, kwargs);
        Object result = switch (name) {
            case "abs" -> {
                defined(v);
                yield v instanceof Double d ? (Object) Math.abs(d) : Py.isInteger(v) ? (Object) Math.abs(Py.toLong(v)) : typeError(name, v);
            }
            case "attr" -> Access.attribute(v, a.string(a.required(0, "name")));
            case "capitalize" -> Methods.capitalize(Py.str(v));
            case "center" -> {
                long width = Py.toLong(a.optional(0, "width", 80L));
                String s = Py.str(v);
                int total = (int) Math.max(0, width - s.codePointCount(0, s.length()));
                int left = total / 2 + (total & (int) width & 1);
                yield " ".repeat(left) + s + " ".repeat(total - left);
            }
            case "count", "length" -> (long) Py.len(v);
            case "d", "default" -> {
                Object fallback = a.optional(0, "default_value", "");
                boolean bool = Py.truthy(a.optional(1, "boolean", false));
                yield v instanceof Undefined || (bool && !Py.truthy(v)) ? fallback : v;
            }
            case "dictsort" -> dictsort(v, a);
            case "e", "escape" -> escape(Py.str(v));
            case "first" -> {
                List<Object> items = Py.iterate(defined(v));
                yield items.isEmpty() ? new Undefined("No first item, sequence was empty.") : items.get(0);
            }
            case "last" -> {
                List<Object> items = Py.iterate(defined(v));
                yield items.isEmpty() ? new Undefined("No last item, sequence was empty.") : items.get(items.size() - 1);
            }
            case "float" -> toFloat(v, a.optional(0, "default", 0.0));
            case "int" -> toInt(v, a.optional(0, "default", 0L), Py.toLong(a.optional(1, "base", 10L)));
            case "format" -> {
                List<Object> rest = new ArrayList<>(a.positional);
                a.positional.clear();
                yield PercentFormat.format(Py.str(v), rest.size() == 1 && !(rest.get(0) instanceof PyTuple)
                        ? rest.get(0) : new PyTuple(rest));
            }
            case "indent" -> indent(Py.str(v), a.optional(0, "width", 4L), Py.truthy(a.optional(1, "first", false)),
                    Py.truthy(a.optional(2, "blank", false)));
            case "items" -> {
                if (v instanceof Undefined) {
                    yield List.of();
                }
                if (!(v instanceof Map<?, ?> m)) {
                    throw new JinjaRuntimeException("Can only get item pairs from a mapping, not " + Py.typeName(v));
                }
                List<Object> out = new ArrayList<>();
                m.forEach((k, x) -> out.add(PyTuple.of(k, x)));
                yield out;
            }
            case "join" -> {
                String sep = a.string(a.optional(0, "d", ""));
                Object attribute = a.optional(1, "attribute", null);
                StringBuilder sb = new StringBuilder();
                List<Object> items = Py.iterate(v);
                for (int i = 0; i < items.size(); i++) {
                    if (i > 0) {
                        sb.append(sep);
                    }
                    Object item = attribute == null ? items.get(i) : attributePath(items.get(i), attribute);
                    sb.append(Py.str(item));
                }
                yield sb.toString();
            }
            case "list" -> Py.iterate(defined(v));
            case "lower" -> Py.str(v).toLowerCase(java.util.Locale.ROOT);
            case "upper" -> Py.str(v).toUpperCase(java.util.Locale.ROOT);
            case "map" -> map(v, a);
            case "max", "min" -> {
                boolean caseSensitive = Py.truthy(a.optional(0, "case_sensitive", false));
                Object attribute = a.optional(1, "attribute", null);
                List<Object> items = Py.iterate(defined(v));
                if (items.isEmpty()) {
                    yield new Undefined("No aggregated item, sequence was empty.");
                }
                Comparator<Object> cmp = keyComparator(caseSensitive, attribute);
                Object best = items.get(0);
                for (Object o : items) {
                    int c = cmp.compare(o, best);
                    if (name.equals("max") ? c > 0 : c < 0) {
                        best = o;
                    }
                }
                yield best;
            }
            case "select", "reject" -> selectByTest(v, a, name.equals("select"), false);
            case "selectattr", "rejectattr" -> selectByTest(v, a, name.equals("selectattr"), true);
            case "replace" -> {
                String old = a.string(a.required(0, "old"));
                String rep = a.string(a.required(1, "new"));
                Object count = a.optional(2, "count", null);
                yield Methods.replace(Py.str(v), old, rep, count == null ? -1 : Py.toLong(count));
            }
            case "reverse" -> {
                if (v instanceof String s) {
                    yield new StringBuilder(s).reverse().toString();
                }
                List<Object> items = Py.iterate(defined(v));
                java.util.Collections.reverse(items);
                yield items;
            }
            case "round" -> round(v, Py.toLong(a.optional(0, "precision", 0L)), a.string(a.optional(1, "method", "common")));
            case "safe", "string" -> Py.str(v);
            case "pprint" -> Py.repr(v);
            case "sort" -> {
                boolean reverse = Py.truthy(a.optional(0, "reverse", false));
                boolean caseSensitive = Py.truthy(a.optional(1, "case_sensitive", false));
                Object attribute = a.optional(2, "attribute", null);
                List<Object> items = Py.iterate(defined(v));
                Comparator<Object> cmp = keyComparator(caseSensitive, attribute);
                items.sort(reverse ? cmp.reversed() : cmp);
                yield items;
            }
            case "sum" -> {
                Object attribute = a.optional(0, "attribute", null);
                Object total = a.optional(1, "start", 0L);
                for (Object o : Py.iterate(defined(v))) {
                    total = Py.binary("+", total, attribute == null ? o : attributePath(o, attribute));
                }
                yield total;
            }
            case "title" -> {
                StringBuilder sb = new StringBuilder();
                for (String part : splitKeepingDelimiters(Py.str(v))) {
                    if (!part.isEmpty()) {
                        int first = part.codePointAt(0);
                        sb.append(new String(Character.toChars(first)).toUpperCase(java.util.Locale.ROOT))
                                .append(part.substring(Character.charCount(first)).toLowerCase(java.util.Locale.ROOT));
                    }
                }
                yield sb.toString();
            }
            case "tojson" -> {
                a.optional(0, "ensure_ascii", false);
                Object indent = a.optional(1, "indent", null);
                Object separators = a.optional(2, "separators", null);
                boolean sortKeys = Py.truthy(a.optional(3, "sort_keys", false));
                String itemSep = null;
                String keySep = null;
                if (separators instanceof List<?> l && l.size() == 2) {
                    itemSep = a.string(l.get(0));
                    keySep = a.string(l.get(1));
                } else if (separators != null) {
                    throw new JinjaRuntimeException("tojson separators must be a pair of strings");
                }
                String indentText = switch (indent) {
                    case null -> null;
                    case String s -> s;
                    default -> " ".repeat((int) Math.max(0, Py.toLong(indent)));
                };
                yield new PyJson(indentText, itemSep, keySep, sortKeys).dumps(v);
            }
            case "trim" -> {
                Object chars = a.optional(0, "chars", null);
                yield Py.strip(Py.str(v), chars == null ? null : a.string(chars));
            }
            case "unique" -> {
                boolean caseSensitive = Py.truthy(a.optional(0, "case_sensitive", false));
                Object attribute = a.optional(1, "attribute", null);
                List<Object> out = new ArrayList<>();
                List<Object> seen = new ArrayList<>();
                for (Object o : Py.iterate(defined(v))) {
                    Object key = sortKey(attribute == null ? o : attributePath(o, attribute), caseSensitive);
                    if (!Py.contains(seen, key)) {
                        seen.add(key);
                        out.add(o);
                    }
                }
                yield out;
            }
            case "wordcount" -> (long) Methods.split(Py.str(v), null, -1).size();
            case "batch" -> {
                long size = Py.toLong(a.required(0, "linecount"));
                Object fill = a.optional(1, "fill_with", null);
                List<Object> out = new ArrayList<>();
                List<Object> cur = new ArrayList<>();
                for (Object o : Py.iterate(defined(v))) {
                    cur.add(o);
                    if (cur.size() == size) {
                        out.add(cur);
                        cur = new ArrayList<>();
                    }
                }
                if (!cur.isEmpty()) {
                    while (fill != null && cur.size() < size) {
                        cur.add(fill);
                    }
                    out.add(cur);
                }
                yield out;
            }
            default -> throw new JinjaRuntimeException("no filter named '" + name + "'");
        };
        a.done();
        return result;
    }

    private static Object defined(Object v) {
        if (v instanceof Undefined u) {
            throw u.fail();
        }
        return v;
    }

    private static Object typeError(String filter, Object v) {
        throw new JinjaRuntimeException("filter '" + filter + "' cannot take a " + Py.typeName(v));
    }

    /** Jinja's attribute getter: {@code "a.b"} or an integer index, each step an item lookup. */
    static Object attributePath(Object v, Object attribute) {
        if (Py.isInteger(attribute)) {
            return Access.item(v, attribute);
        }
        Object cur = v;
        for (String part : Py.str(attribute).split("\\.")) {
            Object key = !part.isEmpty() && part.chars().allMatch(Character::isDigit) ? (Object) Long.parseLong(part) : part;
            cur = Access.item(cur, key);
        }
        return cur;
    }

    private static Object sortKey(Object v, boolean caseSensitive) {
        return !caseSensitive && v instanceof String s ? s.toLowerCase(java.util.Locale.ROOT) : v;
    }

    private static Comparator<Object> keyComparator(boolean caseSensitive, Object attribute) {
        return (x, y) -> {
            Object kx = sortKey(attribute == null ? x : attributePath(x, attribute), caseSensitive);
            Object ky = sortKey(attribute == null ? y : attributePath(y, attribute), caseSensitive);
            return Py.compare(kx, ky, "<");
        };
    }

    private static Object dictsort(Object v, Arguments a) {
        boolean caseSensitive = Py.truthy(a.optional(0, "case_sensitive", false));
        String by = a.string(a.optional(1, "by", "key"));
        boolean reverse = Py.truthy(a.optional(2, "reverse", false));
        if (!(v instanceof Map<?, ?> m)) {
            throw new JinjaRuntimeException("dictsort needs a mapping, not " + Py.typeName(v));
        }
        int pos = switch (by) {
            case "key" -> 0;
            case "value" -> 1;
            default -> throw new JinjaRuntimeException("You can only sort by either 'key' or 'value'");
        };
        List<Object> items = new ArrayList<>();
        m.forEach((k, x) -> items.add(PyTuple.of(k, x)));
        Comparator<Object> cmp = (x, y) -> Py.compare(sortKey(((List<?>) x).get(pos), caseSensitive),
                sortKey(((List<?>) y).get(pos), caseSensitive), "<");
        items.sort(reverse ? cmp.reversed() : cmp);
        return items;
    }

    private static Object map(Object v, Arguments a) {
        List<Object> items = Py.iterate(defined(v));
        List<Object> out = new ArrayList<>();
        if (a.positional.isEmpty()) {
            Object attribute = a.required(-1, "attribute");
            Object fallback = a.optional(-1, "default", null);
            boolean hasDefault = a.keywords.containsKey("default");
            for (Object o : items) {
                Object x = attributePath(o, attribute);
                out.add(hasDefault && x instanceof Undefined ? fallback : x);
            }
            return out;
        }
        String filter = a.string(a.positional.get(0));
        if (!exists(filter)) {
            throw new JinjaRuntimeException("no filter named '" + filter + "'");
        }
        List<Object> rest = new ArrayList<>(a.positional.subList(1, a.positional.size()));
        Map<String, Object> kw = new LinkedHashMap<>(a.keywords);
        a.positional.clear();
        a.keywords.clear();
        for (Object o : items) {
            out.add(apply(filter, o, rest, kw));
        }
        return out;
    }

    private static Object selectByTest(Object v, Arguments a, boolean keep, boolean byAttribute) {
        List<Object> items = Py.iterate(defined(v));
        List<Object> args = new ArrayList<>(a.positional);
        Map<String, Object> kw = new LinkedHashMap<>(a.keywords);
        a.positional.clear();
        a.keywords.clear();
        Object attribute = null;
        if (byAttribute) {
            if (args.isEmpty()) {
                throw new JinjaRuntimeException("selectattr/rejectattr need an attribute name");
            }
            attribute = args.remove(0);
        }
        String test = args.isEmpty() ? null : Py.str(args.remove(0));
        if (test != null && !Tests.exists(test)) {
            throw new JinjaRuntimeException("no test named '" + test + "'");
        }
        List<Object> out = new ArrayList<>();
        for (Object o : items) {
            Object x = byAttribute ? attributePath(o, attribute) : o;
            boolean passed = test == null ? Py.truthy(x) : Tests.apply(test, x, args, kw);
            if (passed == keep) {
                out.add(o);
            }
        }
        return out;
    }

    private static String escape(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> sb.append("&amp;");
                case '<' -> sb.append("&lt;");
                case '>' -> sb.append("&gt;");
                case '"' -> sb.append("&#34;");
                case '\'' -> sb.append("&#39;");
                default -> sb.append(c);
            }
        }
        return sb.toString();
    }

    private static Object toFloat(Object v, Object fallback) {
        if (v instanceof Double) {
            return v;
        }
        if (Py.isInteger(v)) {
            return (double) Py.toLong(v);
        }
        if (v instanceof String s) {
            try {
                return Double.parseDouble(Py.strip(s, null).replace("_", ""));
            } catch (NumberFormatException e) {
                return fallback;
            }
        }
        return fallback;
    }

    private static Object toInt(Object v, Object fallback, long base) {
        if (Py.isInteger(v)) {
            return Py.toLong(v);
        }
        if (v instanceof Double d) {
            return (long) (double) d;
        }
        if (v instanceof String s) {
            String t = Py.strip(s, null).replace("_", "");
            try {
                return Long.parseLong(t, (int) base);
            } catch (NumberFormatException e) {
                try {
                    return (long) Double.parseDouble(t);
                } catch (NumberFormatException e2) {
                    return fallback;
                }
            }
        }
        return fallback;
    }

    private static String indent(String s, Object width, boolean first, boolean blank) {
        String indention = width instanceof String w ? w : " ".repeat((int) Math.max(0, Py.toLong(width)));
        List<Object> lines = new ArrayList<>();
        for (Object line : Methods.split(s + "\n", "\n", -1)) {
            lines.add(line);
        }
        lines.remove(lines.size() - 1);
        String rv;
        if (blank) {
            rv = String.join("\n" + indention, lines.stream().map(o -> (String) o).toList());
        } else {
            StringBuilder sb = new StringBuilder((String) lines.get(0));
            if (lines.size() > 1) {
                sb.append('\n');
                for (int i = 1; i < lines.size(); i++) {
                    String line = (String) lines.get(i);
                    if (i > 1) {
                        sb.append('\n');
                    }
                    sb.append(line.isEmpty() ? line : indention + line);
                }
            }
            rv = sb.toString();
        }
        return first ? indention + rv : rv;
    }

    private static Object round(Object v, long precision, String method) {
        defined(v);
        if (!Py.isNumber(v)) {
            return typeError("round", v);
        }
        BigDecimal b = new BigDecimal(Py.toDouble(v));
        RoundingMode mode = switch (method) {
            case "common" -> RoundingMode.HALF_EVEN;
            case "ceil" -> RoundingMode.CEILING;
            case "floor" -> RoundingMode.FLOOR;
            default -> throw new JinjaRuntimeException("method must be common, ceil or floor");
        };
        return b.setScale((int) precision, mode).doubleValue();
    }

    private static List<String> splitKeepingDelimiters(String s) {
        List<String> parts = new ArrayList<>();
        java.util.regex.Matcher m = WORD_BEGINNING.matcher(s);
        int last = 0;
        while (m.find()) {
            parts.add(s.substring(last, m.start()));
            parts.add(m.group());
            last = m.end();
        }
        parts.add(s.substring(last));
        return parts;
    }
}
