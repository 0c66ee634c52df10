package io.moe4j.generate.constraint;

import java.util.List;

/**
 * Inside a JSON number: {@code -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?}, without fraction or exponent for
 * an integer. A number has no closing byte: it ends when the next byte is not part of it, and that byte then goes
 * to the enclosing value. Parts are capped at {@value #MAX_DIGITS} digits ({@value #MAX_EXPONENT_DIGITS} in the
 * exponent), a narrowing that keeps numbers within what parsers and doubles take: below 1e120 and, unless zero, above
 * 1e-120 (with three exponent digits 1e999 is valid JSON but infinity to a float64 parser).
 *
 * @param digits digits so far in the current part (integer, fraction or exponent)
 */
record NumberFrame(boolean integer, int phase, int digits) implements Frame {
    static final int MINUS = 0;
    static final int ZERO = 1;
    static final int INT = 2;
    static final int DOT = 3;
    static final int FRAC = 4;
    static final int EXP = 5;
    static final int EXP_SIGN = 6;
    static final int EXP_DIGITS = 7;
    static final int MAX_DIGITS = 20;
    static final int MAX_EXPONENT_DIGITS = 2;

    /** The frame after the number's first byte, or null when b cannot start a number. */
    static NumberFrame first(boolean integer, int b) {
        if (b == '-') {
            return new NumberFrame(integer, MINUS, 0);
        }
        if (b == '0') {
            return new NumberFrame(integer, ZERO, 1);
        }
        if (b >= '1' && b <= '9') {
            return new NumberFrame(integer, INT, 1);
        }
        return null;
    }

    @Override
    public void step(int b, Stack self, JsonGrammar grammar, List<Stack> out) {
        NumberFrame next = next(b);
        if (next != null) {
            out.add(self.replace(next));
        } else if (canEnd()) {
            Stack parent = self.pop();
            parent.top().step(b, parent, grammar, out);
        }
    }

    private NumberFrame next(int b) {
        boolean digit = b >= '0' && b <= '9';
        return switch (phase) {
            case MINUS -> b == '0' ? new NumberFrame(integer, ZERO, 1)
                    : digit ? new NumberFrame(integer, INT, 1) : null;
            case ZERO -> fractionOrExponent(b);
            case INT -> digit ? (digits < MAX_DIGITS ? new NumberFrame(integer, INT, digits + 1) : null)
                    : fractionOrExponent(b);
            case DOT -> digit ? new NumberFrame(integer, FRAC, 1) : null;
            case FRAC -> digit ? (digits < MAX_DIGITS ? new NumberFrame(integer, FRAC, digits + 1) : null)
                    : (b == 'e' || b == 'E') ? new NumberFrame(integer, EXP, 0) : null;
            case EXP -> (b == '+' || b == '-') ? new NumberFrame(integer, EXP_SIGN, 0)
                    : digit ? new NumberFrame(integer, EXP_DIGITS, 1) : null;
            case EXP_SIGN -> digit ? new NumberFrame(integer, EXP_DIGITS, 1) : null;
            case EXP_DIGITS -> digit && digits < MAX_EXPONENT_DIGITS ? new NumberFrame(integer, EXP_DIGITS, digits + 1)
                    : null;
            default -> null;
        };
    }

    private NumberFrame fractionOrExponent(int b) {
        if (integer) {
            return null;
        }
        if (b == '.') {
            return new NumberFrame(integer, DOT, 0);
        }
        if (b == 'e' || b == 'E') {
            return new NumberFrame(integer, EXP, 0);
        }
        return null;
    }

    @Override
    public boolean canEnd() {
        return phase == ZERO || phase == INT || phase == FRAC || phase == EXP_DIGITS;
    }

    @Override
    public int cost() {
        return canEnd() ? 0 : 1;
    }
}
