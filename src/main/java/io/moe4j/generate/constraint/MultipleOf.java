package io.moe4j.generate.constraint;

import io.moe4j.MoeException;

import java.math.BigDecimal;
import java.math.BigInteger;

/**
 * {@code multipleOf} as an automaton over a number's JSON text without exponent ({@link NumberRanges#unboundedSyntax}
 * gives the syntax; this machine only the divisibility). With the divisor written m = q · 10^z · 10^-e (q, z, e
 * whole, q without trailing zeros), a value v is a multiple of m when N = v · 10^e is a whole number divisible by
 * q · 10^z: the fraction digits past the e-th are zeros, and N (the integer digits and the first e fraction digits,
 * padded with zeros) ends in z zeros and is, without them, 0 mod q. The sign does not matter.
 *
 * <p>The machine reads N's digits as a long division by q does, with its trailing zeros held apart: N's digits so
 * far are X followed by t zeros; the state keeps min(t, z) and the remainder of X · 10^max(0, t - z) mod q. A zero
 * only counts (or, past z, shifts the remainder), any other digit joins the zeros to X. So a divisor of 10^z takes
 * z + 1 states a part, not 10^z. States: the start; the integer part's (q · (z + 1)); f fraction digits read, for
 * f in [0, e] ((e + 1) · q · (z + 1)); past the e-th fraction digit, zeros only (q · (z + 1)).
 */
final class MultipleOf {
    /** The most states the machine may have; the product with the syntax and bounds is bounded apart. */
    static final int MAX_STATES = 20_000;

    private final int q;
    private final int z;
    private final int e;

    private MultipleOf(int q, int z, int e) {
        this.q = q;
        this.z = z;
        this.e = e;
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
        int z = Math.max(0, -m.scale());
        BigInteger q = m.unscaledValue();
        long perPart = q.bitLength() > 31 ? Long.MAX_VALUE / 64 : q.longValueExact() * (z + 1L);
        long states = 1 + (e + 3L) * perPart;
        if (z > 64 || states > MAX_STATES) {
            throw new MoeException("JSON schema 'multipleOf' at " + where + " is " + divisor.toPlainString()
                    + "; its digits other than trailing zeros (" + q + ") make too many automaton states: at most "
                    + MAX_STATES + " are supported");
        }
        return new MultipleOf(q.intValueExact(), z, e).build((int) states);
    }

    private StringAutomaton.Machine build(int n) {
        int[][] t = new int[n][];
        boolean[] accepting = new boolean[n];
        // No digits yet, or only zeros, is the value 0, a multiple of anything: as if its z trailing zeros were
        // there already (a nonzero digit then starts X afresh). After a sign the integer part starts the same way.
        t[0] = concat(new int[] {'-', '-', integer(0, z)}, digits(d -> integer(next(0, z, d))));
        for (int r = 0; r < q; r++) {
            for (int k = 0; k <= z; k++) {
                final int rr = r;
                final int kk = k;
                int at = pack(r, k);
                t[integer(at)] = concat(digits(d -> integer(next(rr, kk, d))), new int[] {'.', '.', fraction(0, at)});
                accepting[integer(at)] = acceptsAfterZeros(r, k, e);
                for (int f = 0; f <= e; f++) {
                    final int ff = f;
                    t[fraction(f, at)] = f < e ? digits(d -> fraction(ff + 1, next(rr, kk, d)))
                            : new int[] {'0', '0', beyond(at)};
                    // a fraction of no digits is not a number; the syntax takes care of it
                    accepting[fraction(f, at)] = f > 0 && acceptsAfterZeros(r, k, e - f);
                }
                t[beyond(at)] = new int[] {'0', '0', beyond(at)};
                accepting[beyond(at)] = acceptsAfterZeros(r, k, 0);
            }
        }
        return new StringAutomaton.Machine(t, accepting);
    }

    /** The packed (remainder, trailing zeros) after digit d. */
    private int next(int r, int k, int d) {
        if (d == 0) {
            return k < z ? pack(r, k + 1) : pack(r * 10 % q, k);
        }
        // X · 10^t + ... : the held zeros join X (r already carries those past z)
        int shifted = (int) ((long) r * pow10(k) % q);
        return pack((shifted * 10 + d) % q, 0);
    }

    /** Whether N, with {@code zeros} more zeros written after the digits read, is a multiple. */
    private boolean acceptsAfterZeros(int r, int k, int zeros) {
        for (int i = 0; i < zeros; i++) {
            int p = next(r, k, 0);
            r = p / (z + 1);
            k = p % (z + 1);
        }
        return k == z && r == 0;
    }

    private int pow10(int k) {
        int v = 1 % q;
        for (int i = 0; i < k; i++) {
            v = v * 10 % q;
        }
        return v;
    }

    private int pack(int r, int k) {
        return r * (z + 1) + k;
    }

    private int integer(int packed) {
        return 1 + packed;
    }

    private int integer(int r, int k) {
        return integer(pack(r, k));
    }

    private int fraction(int f, int packed) {
        int perPart = q * (z + 1);
        return 1 + perPart + f * perPart + packed;
    }

    private int beyond(int packed) {
        int perPart = q * (z + 1);
        return 1 + perPart + (e + 1) * perPart + packed;
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
