package io.moe4j.generate.constraint;

import io.moe4j.MoeException;

import java.math.BigDecimal;
import java.math.BigInteger;

/**
 * {@code multipleOf} as an automaton over a number's JSON text without exponent ({@link NumberRanges#syntax} gives
 * the syntax; this machine only the divisibility). With the divisor written m = p · 10^-e (p a whole number, e >= 0),
 * a value v is a multiple of m when v · 10^e is a whole number divisible by p: the fraction digits past the e-th are
 * zeros, and the whole number made of the integer digits and the first e fraction digits (padded with zeros) is
 * 0 mod p. The machine carries that remainder digit by digit, as a long division does, and where the fraction stops
 * at f <= e digits, the padding multiplies the remainder by 10^(e - f). The sign does not matter.
 *
 * <p>States: the start; the integer part's remainder (p states); f fraction digits read, for f in [0, e], with
 * their remainder ((e + 1) · p); past the e-th fraction digit, zeros only (p).
 */
final class MultipleOf {
    /** The most states the machine may have; the product with the syntax and bounds is bounded apart. */
    static final int MAX_STATES = 20_000;

    private MultipleOf() {
    }

    /**
     * @param divisor the schema's multipleOf, greater than zero
     * @param where   the schema path, for messages
     */
    static StringAutomaton.Machine machine(BigDecimal divisor, String where) {
        if (divisor.signum() <= 0) {
            throw new MoeException("JSON schema 'multipleOf' at " + where + " must be greater than 0, got "
                    + divisor.toPlainString());
        }
        BigDecimal m = divisor.stripTrailingZeros();
        int e = Math.max(0, m.scale());
        BigInteger whole = m.scale() >= 0 ? m.unscaledValue() : m.toBigIntegerExact();
        long states = whole.bitLength() > 31 ? Long.MAX_VALUE : 1 + (e + 3L) * whole.longValueExact();
        if (states > MAX_STATES) {
            throw new MoeException("JSON schema 'multipleOf' at " + where + " is " + divisor.toPlainString()
                    + "; divisors whose digits make a number over " + (MAX_STATES / (e + 3)) + " are not supported");
        }
        int p = whole.intValueExact();
        int n = (int) states;
        int[][] t = new int[n][];
        boolean[] accepting = new boolean[n];
        int[] pow = new int[e + 1];   // 10^k mod p
        pow[0] = 1 % p;
        for (int k = 1; k <= e; k++) {
            pow[k] = pow[k - 1] * 10 % p;
        }
        // after a sign the integer part starts from remainder 0, as it does without one
        t[0] = concat(new int[] {'-', '-', integer(0)}, digits(d -> integer(d % p)));
        for (int r = 0; r < p; r++) {
            final int rr = r;
            t[integer(r)] = concat(digits(d -> integer((10 * rr + d) % p)),
                    new int[] {'.', '.', fraction(p, 0, r)});
            accepting[integer(r)] = (long) r * pow[e] % p == 0;
            for (int f = 0; f <= e; f++) {
                final int ff = f;
                t[fraction(p, f, r)] = f < e ? digits(d -> fraction(p, ff + 1, (10 * rr + d) % p))
                        : new int[] {'0', '0', beyond(p, e, r)};
                // a fraction of no digits is not a number; the syntax takes care of it
                accepting[fraction(p, f, r)] = f > 0 && (long) r * pow[e - f] % p == 0;
            }
            t[beyond(p, e, r)] = new int[] {'0', '0', beyond(p, e, r)};
            accepting[beyond(p, e, r)] = r == 0;
        }
        return new StringAutomaton.Machine(t, accepting);
    }

    private static int integer(int r) {
        return 1 + r;
    }

    private static int fraction(int p, int f, int r) {
        return 1 + p + f * p + r;
    }

    private static int beyond(int p, int e, int r) {
        return 1 + p + (e + 1) * p + r;
    }

    /** Ten transitions, digit d to {@code to(d)}. */
    private static int[] digits(java.util.function.IntUnaryOperator to) {
        int[] t = new int[30];
        for (int d = 0; d < 10; d++) {
            t[3 * d] = '0' + d;
            t[3 * d + 1] = '0' + d;
            t[3 * d + 2] = to.applyAsInt(d);
        }
        return t;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** Whether {@code v} is a multiple of {@code divisor} (exact, as the machine decides it). */
    static boolean divides(BigDecimal divisor, BigDecimal v) {
        return v.remainder(divisor).signum() == 0;
    }
}
