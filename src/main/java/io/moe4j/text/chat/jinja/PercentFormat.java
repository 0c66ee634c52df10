package io.moe4j.text.chat.jinja;

import java.util.List;

/** Python's {@code "fmt" % args} for the conversions templates use: %s, %r, %d, %i, %f and %%. */
final class PercentFormat {
    private PercentFormat() {
    }

    static String format(String fmt, Object args) {
        List<?> values = args instanceof PyTuple t ? t : java.util.Collections.singletonList(args);
        StringBuilder sb = new StringBuilder();
        int next = 0;
        for (int i = 0; i < fmt.length(); i++) {
            char c = fmt.charAt(i);
            if (c != '%') {
                sb.append(c);
                continue;
            }
            if (i + 1 >= fmt.length()) {
                throw new JinjaRuntimeException("incomplete format");
            }
            char conv = fmt.charAt(++i);
            if (conv == '%') {
                sb.append('%');
                continue;
            }
            if (next >= values.size()) {
                throw new JinjaRuntimeException("not enough arguments for format string");
            }
            Object v = values.get(next++);
            switch (conv) {
                case 's' -> sb.append(Py.str(v));
                case 'r' -> sb.append(Py.repr(v));
                case 'd', 'i' -> {
                    if (!Py.isNumber(v)) {
                        throw new JinjaRuntimeException("%" + conv + " format: a real number is required, not " + Py.typeName(v));
                    }
                    sb.append(v instanceof Double d ? (long) (double) d : Py.toLong(v));
                }
                case 'f' -> {
                    if (!Py.isNumber(v)) {
                        throw new JinjaRuntimeException("must be real number, not " + Py.typeName(v));
                    }
                    sb.append(String.format(java.util.Locale.ROOT, "%.6f", Py.toDouble(v)));
                }
                default -> throw new JinjaRuntimeException("unsupported format character '" + conv + "'");
            }
        }
        if (next < values.size()) {
            throw new JinjaRuntimeException("not all arguments converted during string formatting");
        }
        return sb.toString();
    }
}
