package io.moe4j.text.chat.jinja;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code json.dumps} as transformers' {@code tojson} filter calls it: {@code ensure_ascii=False}, no HTML
 * escaping, separators {@code (", ", ": ")} by default or {@code (",", ": ")} with an indent, keys in insertion
 * order unless {@code sort_keys}.
 */
final class PyJson {
    private final String indent;
    private final String itemSeparator;
    private final String keySeparator;
    private final boolean sortKeys;

    PyJson(String indent, String itemSeparator, String keySeparator, boolean sortKeys) {
        this.indent = indent;
        this.itemSeparator = itemSeparator != null ? itemSeparator : indent == null ? ", " : ",";
        this.keySeparator = keySeparator != null ? keySeparator : ": ";
        this.sortKeys = sortKeys;
    }

    String dumps(Object v) {
        StringBuilder sb = new StringBuilder();
        write(v, sb, 0);
        return sb.toString();
    }

    private void write(Object v, StringBuilder sb, int level) {
        switch (v) {
            case null -> sb.append("null");
            case Boolean b -> sb.append(b ? "true" : "false");
            case Long l -> sb.append(l);
            case java.math.BigInteger b -> sb.append(b);
            case Double d -> sb.append(Double.isNaN(d) ? "NaN" : Double.isInfinite(d) ? (d > 0 ? "Infinity" : "-Infinity")
                    : Py.floatRepr(d));
            case String s -> quote(s, sb);
            case PyRange r -> throw new JinjaRuntimeException("Object of type range is not JSON serializable");
            case PyDictView dv -> throw new JinjaRuntimeException("Object of type " + dv.kind() + " is not JSON serializable");
            case List<?> l -> {
                if (l.isEmpty()) {
                    sb.append("[]");
                    return;
                }
                sb.append('[');
                for (int i = 0; i < l.size(); i++) {
                    sb.append(i == 0 ? "" : itemSeparator);
                    newline(sb, level + 1);
                    write(l.get(i), sb, level + 1);
                }
                newline(sb, level);
                sb.append(']');
            }
            case Map<?, ?> m -> {
                if (m.isEmpty()) {
                    sb.append("{}");
                    return;
                }
                List<Map.Entry<String, Object>> entries = new ArrayList<>();
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    entries.add(Map.entry(key(e.getKey()), e.getValue() == null ? NULL : e.getValue()));
                }
                if (sortKeys) {
                    entries.sort((a, b) -> Py.compareCodePoints(a.getKey(), b.getKey()));
                }
                sb.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : entries) {
                    sb.append(first ? "" : itemSeparator);
                    first = false;
                    newline(sb, level + 1);
                    quote(e.getKey(), sb);
                    sb.append(keySeparator);
                    write(e.getValue() == NULL ? null : e.getValue(), sb, level + 1);
                }
                newline(sb, level);
                sb.append('}');
            }
            default -> throw new JinjaRuntimeException("Object of type " + Py.typeName(v) + " is not JSON serializable");
        }
    }

    private static final Object NULL = new Object();

    private static String key(Object k) {
        return switch (k) {
            case String s -> s;
            case null -> "null";
            case Boolean b -> b ? "true" : "false";
            case Long l -> l.toString();
            case java.math.BigInteger b -> b.toString();
            case Double d -> Py.floatRepr(d);
            default -> throw new JinjaRuntimeException("keys must be str, int, float, bool or None, not " + Py.typeName(k));
        };
    }

    private void newline(StringBuilder sb, int level) {
        if (indent != null) {
            sb.append('\n').append(indent.repeat(level));
        }
    }

    static void quote(String s, StringBuilder sb) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
