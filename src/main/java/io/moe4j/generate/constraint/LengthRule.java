package io.moe4j.generate.constraint;

/**
 * {@code minLength} and {@code maxLength} alone, counted in code points as JSON Schema counts them: the state is the
 * length so far (held at {@code min} when there is no maximum), and each character still needed takes a byte at the
 * fewest (an ASCII letter). No automaton, so any bound is cheap.
 *
 * @param max -1 without a bound
 */
record LengthRule(int min, int max) implements StringRule {

    @Override
    public int start() {
        return 0;
    }

    @Override
    public int step(int length, int cp) {
        if (max >= 0 && length >= max) {
            return DEAD;
        }
        return max >= 0 ? length + 1 : Math.min(length + 1, min);
    }

    /** The state after {@code chars} more characters, or {@link #DEAD} past the maximum. */
    int after(int length, int chars) {
        long next = (long) length + chars;
        if (max >= 0) {
            return next > max ? DEAD : (int) next;
        }
        return (int) Math.min(next, min);
    }

    @Override
    public boolean accepts(int length) {
        return length >= min;
    }

    @Override
    public int dist(int length) {
        return Math.max(0, min - length);
    }

    @Override
    public int distAfter(int length, int lo, int hi) {
        int next = step(length, lo);
        return next == DEAD ? NO_WAY : dist(next);
    }
}
