package io.moe4j.text.chat.jinja;

import java.time.LocalDateTime;
import java.time.format.TextStyle;
import java.util.Locale;

/** Python's {@code strftime} in the C locale, with glibc's {@code %-d} (no padding) form, for {@code strftime_now}. */
final class Strftime {
    private Strftime() {
    }

    static String format(LocalDateTime t, String fmt) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < fmt.length(); i++) {
            char c = fmt.charAt(i);
            if (c != '%' || i + 1 >= fmt.length()) {
                sb.append(c);
                continue;
            }
            char code = fmt.charAt(++i);
            boolean pad = true;
            if (code == '-' && i + 1 < fmt.length()) {
                pad = false;
                code = fmt.charAt(++i);
            }
            switch (code) {
                case 'Y' -> sb.append(t.getYear());
                case 'y' -> num(sb, t.getYear() % 100, 2, pad);
                case 'm' -> num(sb, t.getMonthValue(), 2, pad);
                case 'd' -> num(sb, t.getDayOfMonth(), 2, pad);
                case 'e' -> sb.append(pad && t.getDayOfMonth() < 10 ? " " : "").append(t.getDayOfMonth());
                case 'H' -> num(sb, t.getHour(), 2, pad);
                case 'I' -> num(sb, (t.getHour() + 11) % 12 + 1, 2, pad);
                case 'M' -> num(sb, t.getMinute(), 2, pad);
                case 'S' -> num(sb, t.getSecond(), 2, pad);
                case 'f' -> num(sb, t.getNano() / 1000, 6, true);
                case 'j' -> num(sb, t.getDayOfYear(), 3, pad);
                case 'p' -> sb.append(t.getHour() < 12 ? "AM" : "PM");
                case 'B' -> sb.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
                case 'b', 'h' -> sb.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'A' -> sb.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
                case 'a' -> sb.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
                case 'w' -> sb.append(t.getDayOfWeek().getValue() % 7);
                case 'u' -> sb.append(t.getDayOfWeek().getValue());
                case 'F' -> sb.append(String.format("%04d-%02d-%02d", t.getYear(), t.getMonthValue(), t.getDayOfMonth()));
                case 'T' -> sb.append(String.format("%02d:%02d:%02d", t.getHour(), t.getMinute(), t.getSecond()));
                case 'D' -> sb.append(String.format("%02d/%02d/%02d", t.getMonthValue(), t.getDayOfMonth(), t.getYear() % 100));
                case 'Z', 'z' -> { }
                case '%' -> sb.append('%');
                default -> sb.append('%').append(pad ? "" : "-").append(code);
            }
        }
        return sb.toString();
    }

    private static void num(StringBuilder sb, int v, int width, boolean pad) {
        String s = Integer.toString(v);
        if (pad) {
            sb.append("0".repeat(Math.max(0, width - s.length())));
        }
        sb.append(s);
    }
}
