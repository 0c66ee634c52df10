package io.moe4j.generate.constraint;

import java.util.Map;
import java.util.Optional;

/**
 * The {@code format}s a string is held to, as whole-string expressions of {@link SchemaRegex}'s dialect: the ones
 * OpenAI's structured outputs list (date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid), each as
 * RFC 3339, RFC 1123 / 5321 and RFC 4291 / 4122 define them. Where the full language is not regular or not worth
 * the states, the expression is a subset (every string it allows is valid): times without a leap second and with an
 * upper-case {@code T} and {@code Z} at most nine digits of a second's fraction and an offset
 * within 18 hours; hostnames of at most four labels
 * of at most 62 characters (so within 253); emails whose local part is one or two dot-separated runs of letters,
 * digits, {@code _+-} and whose domain ends in one of the common top-level domains; IPv6 without an embedded IPv4
 * tail. Other formats are annotations, as JSON Schema
 * makes every format by default: not enforced.
 */
final class StringFormats {
    private static final String HOUR = "([01][0-9]|2[0-3])";
    private static final String MINUTE = "[0-5][0-9]";
    private static final String DATE = "([0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])"
            + "|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
            // February 29th in leap years: divisible by 4 but not by 100, or by 400
            + "|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)";
    /** An offset within the +-18:00 that validators (and java.time) take. */
    private static final String OFFSET = "[+-]((0[0-9]|1[0-7]):" + MINUTE + "|18:00)";
    private static final String TIME = HOUR + ":" + MINUTE + ":" + MINUTE + "(\\.[0-9]{1,9})?(Z|" + OFFSET + ")";
    private static final String DURATION_TIME = "T([0-9]+H([0-9]+M([0-9]+S)?)?|[0-9]+M([0-9]+S)?|[0-9]+S)";
    private static final String DURATION = "P([0-9]+W|([0-9]+D|[0-9]+M([0-9]+D)?|[0-9]+Y([0-9]+M([0-9]+D)?)?)("
            + DURATION_TIME + ")?|" + DURATION_TIME + ")";
    private static final String LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,60}[A-Za-z0-9])?";
    /** Top-level domains an email may end in: common delegated ones (validators check the IANA list). */
    private static final String TOP_LEVEL = String.join("|", "com", "org", "net", "edu", "gov", "int", "io", "ai",
            "dev", "app", "co", "info", "biz", "me", "us", "uk", "de", "fr", "es", "it", "nl", "eu", "ca", "au", "jp",
            "cn", "in", "br", "ch", "se", "no", "fi", "dk", "pl", "be", "at", "nz", "kr", "mx");
    private static final String OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
    private static final String H16 = "[0-9A-Fa-f]{1,4}";

    private static final Map<String, String> EXPRESSIONS = Map.of(
            "date", DATE,
            "time", TIME,
            "date-time", DATE + "T" + TIME,
            "duration", DURATION,
            "email", "[A-Za-z0-9_+-]{1,32}(\\.[A-Za-z0-9_+-]{1,31})?@(" + LABEL + "\\.){1,2}(" + TOP_LEVEL + ")",
            "hostname", LABEL + "(\\." + LABEL + "){0,3}",
            "ipv4", OCTET + "(\\." + OCTET + "){3}",
            "ipv6", "(" + H16 + ":){7}" + H16
                    + "|(" + H16 + ":){1,7}:"
                    + "|(" + H16 + ":){1,6}:" + H16
                    + "|(" + H16 + ":){1,5}(:" + H16 + "){1,2}"
                    + "|(" + H16 + ":){1,4}(:" + H16 + "){1,3}"
                    + "|(" + H16 + ":){1,3}(:" + H16 + "){1,4}"
                    + "|(" + H16 + ":){1,2}(:" + H16 + "){1,5}"
                    + "|" + H16 + ":(:" + H16 + "){1,6}"
                    + "|:((:" + H16 + "){1,7}|:)",
            "uuid", "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}");

    private StringFormats() {
    }

    /** The anchored expression of a format that is enforced; empty for an annotation-only one. */
    static Optional<String> expression(String format) {
        String e = EXPRESSIONS.get(format);
        return e == null ? Optional.empty() : Optional.of("^(" + e + ")$");
    }

    /** The formats that are enforced, for documentation and tests. */
    static java.util.Set<String> enforced() {
        return EXPRESSIONS.keySet();
    }
}
