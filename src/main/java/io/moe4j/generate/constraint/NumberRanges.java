package io.moe4j.generate.constraint;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code minimum}, {@code maximum}, {@code exclusiveMinimum} and {@code exclusiveMaximum} as expressions of
 * {@link SchemaRegex}'s dialect over a number's JSON text: for decimal texts (no exponent) "at least a" and "at most
 * b" are regular, digit by digit against the bound's digits, so each bound is one expression and the automaton takes
 * their product with {@link #syntax}. Narrowings: no exponent, no {@code -0} where the range starts at zero or above.
 */
final class NumberRanges {
    private static final String DIGITS = "[0-9]*";
    private static final String FRACTION = "(\\.[0-9]+)?";
    private static final String NON_NEGATIVE = "(0|[1-9][0-9]*)";
    /** Below zero: not {@code -0} nor {@code -0.0}, which are zero. */
    private static final String NEGATIVE = "-(0\\.[0-9]*[1-9][0-9]*|[1-9][0-9]*" + FRACTION + ")";

    private NumberRanges() {
    }

    /** JSON's number text without exponent, parts capped as {@link NumberFrame} caps them. */
    static String syntax(boolean integer) {
        int digits = NumberFrame.MAX_DIGITS;
        return "^-?(0|[1-9][0-9]{0," + (digits - 1) + "})" + (integer ? "" : "(\\.[0-9]{1," + digits + "})?") + "$";
    }

    /**
     * JSON's number text without exponent and without the digit caps: for rules whose product with the caps grows
     * too large (multipleOf), which cap the whole text's length beside the automaton instead ({@link MaxLengthRule},
     * {@link #MAX_TEXT}).
     */
    static String unboundedSyntax(boolean integer) {
        return "^-?(0|[1-9][0-9]*)" + (integer ? "" : "(\\.[0-9]+)?") + "$";
    }

    /** The longest number text {@link #unboundedSyntax} is held to: a sign, and both parts at their cap. */
    static final int MAX_TEXT = 2 * NumberFrame.MAX_DIGITS + 2;

    /** The texts of values at least (above, when strict) {@code a}. */
    static String atLeast(BigDecimal a, boolean strict, boolean integer) {
        if (integer) {
            BigInteger lo = strict ? floor(a).add(BigInteger.ONE) : ceil(a);
            return "^(" + (lo.signum() >= 0 ? integers(lo, null)
                    : NON_NEGATIVE + "|-(" + integers(BigInteger.ONE, lo.negate()) + ")") + ")$";
        }
        return "^(" + (a.signum() >= 0 ? absAtLeast(a, strict)
                : NON_NEGATIVE + FRACTION + "|-(" + absAtMost(a.negate(), strict) + ")") + ")$";
    }

    /** The texts of values at most (below, when strict) {@code b}. */
    static String atMost(BigDecimal b, boolean strict, boolean integer) {
        if (integer) {
            BigInteger hi = strict ? ceil(b).subtract(BigInteger.ONE) : floor(b);
            return "^(" + (hi.signum() >= 0 ? "-[1-9][0-9]*|" + integers(BigInteger.ZERO, hi)
                    : "-(" + integers(hi.negate(), null) + ")") + ")$";
        }
        return "^(" + (b.signum() >= 0 ? NEGATIVE + "|" + absAtMost(b, strict)
                : "-(" + absAtLeast(b.negate(), strict) + ")") + ")$";
    }

    private static BigInteger floor(BigDecimal v) {
        return v.setScale(0, RoundingMode.FLOOR).toBigIntegerExact();
    }

    private static BigInteger ceil(BigDecimal v) {
        return v.setScale(0, RoundingMode.CEILING).toBigIntegerExact();
    }

    /** Non-negative texts I(.F)? of value at least m (m >= 0). */
    private static String absAtLeast(BigDecimal m, boolean strict) {
        BigInteger whole = floor(m);
        String fraction = fractionDigits(m);
        List<String> alternatives = new ArrayList<>();
        alternatives.add("(" + integers(whole.add(BigInteger.ONE), null) + ")" + FRACTION);
        alternatives.add(whole + fractionAtLeast(fraction, strict));
        return String.join("|", alternatives);
    }

    /** Non-negative texts I(.F)? of value at most m (m >= 0); with strict and m = 0 none but what is below zero. */
    private static String absAtMost(BigDecimal m, boolean strict) {
        BigInteger whole = floor(m);
        String fraction = fractionDigits(m);
        List<String> alternatives = new ArrayList<>();
        if (whole.signum() > 0) {
            alternatives.add("(" + integers(BigInteger.ZERO, whole.subtract(BigInteger.ONE)) + ")" + FRACTION);
        }
        String equal = fractionAtMost(fraction, strict);
        if (equal != null) {
            alternatives.add(whole + equal);
        }
        // absAtMost(0, strict) is empty: the caller's other alternative stands alone
        return alternatives.isEmpty() ? "[^\\s\\S]" : String.join("|", alternatives);
    }

    /** The digits of m's fraction without trailing zeros ("" for a whole number). */
    private static String fractionDigits(BigDecimal m) {
        BigDecimal f = m.subtract(new BigDecimal(floor(m))).stripTrailingZeros();
        return f.signum() == 0 ? "" : f.toPlainString().substring(2);
    }

    /** After the whole part equal to the bound's: the optional fraction at least 0.d. */
    private static String fractionAtLeast(String d, boolean strict) {
        if (d.isEmpty()) {
            return strict ? "\\.[0-9]*[1-9][0-9]*" : FRACTION;
        }
        return "\\.(" + digitsAtLeast(d, strict) + ")";
    }

    /** Fraction digits (one or more) at least 0.d; d nonempty, ending in a nonzero digit. */
    private static String digitsAtLeast(String d, boolean strict) {
        int c = d.charAt(0) - '0';
        String rest = d.substring(1);
        List<String> alternatives = new ArrayList<>();
        if (c < 9) {
            alternatives.add("[" + (c + 1) + "-9]" + DIGITS);
        }
        String after = rest.isEmpty() ? (strict ? "[0-9]*[1-9][0-9]*" : DIGITS) : "(" + digitsAtLeast(rest, strict) + ")";
        alternatives.add(c + after);
        return String.join("|", alternatives);
    }

    /** After the whole part equal to the bound's: the optional fraction at most 0.d; null when none fits. */
    private static String fractionAtMost(String d, boolean strict) {
        if (d.isEmpty()) {
            return strict ? null : "(\\.0+)?";
        }
        return "(\\.(" + digitsAtMost(d, strict) + "))?";
    }

    /** Fraction digits (one or more) at most 0.d; d nonempty, ending in a nonzero digit. */
    private static String digitsAtMost(String d, boolean strict) {
        int c = d.charAt(0) - '0';
        String rest = d.substring(1);
        List<String> alternatives = new ArrayList<>();
        if (c > 0) {
            alternatives.add("[0-" + (c - 1) + "]" + DIGITS);
        }
        if (rest.isEmpty()) {
            if (!strict) {
                alternatives.add(c + "0*");
            }
        } else {
            // stopping here leaves a value below 0.d (the rest holds a nonzero digit)
            alternatives.add(c + "(" + digitsAtMost(rest, strict) + ")?");
        }
        return String.join("|", alternatives);
    }

    /** Whole numbers from lo to hi (null: without bound) in canonical form, lo >= 0. */
    static String integers(BigInteger lo, BigInteger hi) {
        if (hi != null && lo.compareTo(hi) > 0) {
            return "[^\\s\\S]"; // no number: a class of nothing
        }
        List<String> alternatives = new ArrayList<>();
        String low = lo.toString();
        int last = hi == null ? low.length() : hi.toString().length();
        for (int n = low.length(); n <= last; n++) {
            BigInteger from = n == low.length() ? lo : BigInteger.TEN.pow(n - 1);
            BigInteger top = BigInteger.TEN.pow(n).subtract(BigInteger.ONE);
            BigInteger to = hi == null || hi.compareTo(top) > 0 ? top : hi;
            alternatives.add(sameLength(from.toString(), to.toString()));
        }
        if (hi == null) {
            alternatives.add("[1-9][0-9]{" + low.length() + ",}");
        }
        return String.join("|", alternatives);
    }

    /** Decimal strings of one length from lo to hi, both of that length. */
    private static String sameLength(String lo, String hi) {
        int n = lo.length();
        if (n == 1) {
            return "[" + lo + "-" + hi + "]";
        }
        char a = lo.charAt(0);
        char b = hi.charAt(0);
        String loRest = lo.substring(1);
        String hiRest = hi.substring(1);
        if (a == b) {
            return a + "(" + sameLength(loRest, hiRest) + ")";
        }
        if (loRest.chars().allMatch(c -> c == '0') && hiRest.chars().allMatch(c -> c == '9')) {
            return "[" + a + "-" + b + "][0-9]{" + (n - 1) + "}";
        }
        List<String> alternatives = new ArrayList<>();
        alternatives.add(a + "(" + sameLength(loRest, "9".repeat(n - 1)) + ")");
        if (b - a > 1) {
            alternatives.add("[" + (char) (a + 1) + "-" + (char) (b - 1) + "][0-9]{" + (n - 1) + "}");
        }
        alternatives.add(b + "(" + sameLength("0".repeat(n - 1), hiRest) + ")");
        return "(" + String.join("|", alternatives) + ")";
    }
}
