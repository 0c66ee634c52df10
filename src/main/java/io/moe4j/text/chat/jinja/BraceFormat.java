package io.moe4j.text.chat.jinja;

import java.util.List;
import java.util.Map;

/** Python's {@code str.format} for plain fields: {@code {}}, {@code {0}}, {@code {name}}, {@code {{}} and {@code }}}. */
final class BraceFormat {
    private BraceFormat() {
    }

    static String format(String fmt, List<Object> args, Map<String, Object> kwargs) {
        StringBuilder sb = new StringBuilder();
        int auto = 0;
        for (int i = 0; i < fmt.length(); i++) {
            char c = fmt.charAt(i);
            if (c == '{') {
                if (i + 1 < fmt.length() && fmt.charAt(i + 1) == '{') {
                    sb.append('{');
                    i++;
                    continue;
                }
                int close = fmt.indexOf('}', i);
                if (close < 0) {
                    throw new JinjaRuntimeException("single '{' encountered in format string");
                }
                String field = fmt.substring(i + 1, close);
                if (field.contains(":") || field.contains("!")) {
                    throw new JinjaRuntimeException("format specs in str.format are not supported: {" + field + "}");
                }
                Object v;
                if (field.isEmpty()) {
                    if (auto >= args.size()) {
                        throw new JinjaRuntimeException("Replacement index " + auto + " out of range for positional args tuple");
                    }
                    v = args.get(auto++);
                } else if (field.chars().allMatch(Character::isDigit)) {
                    int idx = Integer.parseInt(field);
                    if (idx >= args.size()) {
                        throw new JinjaRuntimeException("Replacement index " + idx + " out of range for positional args tuple");
                    }
                    v = args.get(idx);
                } else {
                    if (!kwargs.containsKey(field)) {
                        throw new JinjaRuntimeException("KeyError: '" + field + "'");
                    }
                    v = kwargs.get(field);
                }
                sb.append(Py.str(v));
                i = close;
            } else if (c == '}') {
                if (i + 1 < fmt.length() && fmt.charAt(i + 1) == '}') {
                    i++;
                    sb.append('}');
                } else {
                    throw new JinjaRuntimeException("single '}' encountered in format string");
                }
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }
}
