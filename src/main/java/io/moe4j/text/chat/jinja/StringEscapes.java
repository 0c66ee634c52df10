package io.moe4j.text.chat.jinja;

/** Decodes the backslash escapes of a Jinja string literal as Python's {@code unicode-escape} codec does. */
final class StringEscapes {
    private StringEscapes() {
    }

    static String decode(String body) {
        if (body.indexOf('\\') < 0) {
            return body;
        }
        StringBuilder sb = new StringBuilder(body.length());
        for (int i = 0; i < body.length(); i++) {
            char c = body.charAt(i);
            if (c != '\\' || i + 1 >= body.length()) {
                sb.append(c);
                continue;
            }
            char e = body.charAt(++i);
            switch (e) {
                case 'n' -> sb.append('\n');
                case 't' -> sb.append('\t');
                case 'r' -> sb.append('\r');
                case '\\' -> sb.append('\\');
                case '\'' -> sb.append('\'');
                case '"' -> sb.append('"');
                case 'a' -> sb.append('\u0007');
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'v' -> sb.append('\u000b');
                case '\n' -> { }
                case 'x' -> i = hex(body, i, 2, sb);
                case 'u' -> i = hex(body, i, 4, sb);
                case 'U' -> i = hex(body, i, 8, sb);
                default -> {
                    if (e >= '0' && e <= '7') {
                        int end = i;
                        while (end < body.length() && end < i + 3 && body.charAt(end) >= '0' && body.charAt(end) <= '7') {
                            end++;
                        }
                        sb.appendCodePoint(Integer.parseInt(body.substring(i, end), 8));
                        i = end - 1;
                    } else {
                        sb.append('\\').append(e);
                    }
                }
            }
        }
        return sb.toString();
    }

    private static int hex(String body, int at, int n, StringBuilder sb) {
        if (at + n >= body.length()) {
            sb.append('\\').append(body.charAt(at));
            return at;
        }
        String digits = body.substring(at + 1, at + 1 + n);
        try {
            sb.appendCodePoint(Integer.parseInt(digits, 16));
            return at + n;
        } catch (IllegalArgumentException e) {
            sb.append('\\').append(body.charAt(at));
            return at;
        }
    }
}
