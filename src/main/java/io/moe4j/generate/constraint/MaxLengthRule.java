package io.moe4j.generate.constraint;

/**
 * A pattern or format with {@code maxLength}: the expressions' automaton without the bound, and the length so far
 * beside its state (state = automaton state x (max + 1) + length). Multiplying the bound into the automaton made a
 * length of 254 beside an email format tens of thousands of states; kept beside it, a character is taken only where
 * the automaton's fewest characters to acceptance still fit, which is exact (every string within the bound passes
 * that test at each of its prefixes) and never leaves a string that cannot be finished.
 *
 * <p>The budget's cost is the bytes of a real completion within the bound: the fewest-bytes one where its characters
 * fit, else the fewest-characters one; along either the cost falls with every byte, as the budget rule needs.
 */
record MaxLengthRule(StringAutomaton inner, int max) implements StringRule {
    /** The largest maxLength beside a pattern or format: the state must fit an int. */
    static final int MAX_BOUND = 100_000;

    int innerState(int state) {
        return state / (max + 1);
    }

    int length(int state) {
        return state % (max + 1);
    }

    private int of(int innerState, int length) {
        return innerState * (max + 1) + length;
    }

    @Override
    public int start() {
        return of(inner.start(), 0);
    }

    @Override
    public int step(int state, int cp) {
        int length = length(state);
        int next = inner.step(innerState(state), cp);
        return next == DEAD || !fits(next, length + 1) ? DEAD : of(next, length + 1);
    }

    /** Whether the automaton can still accept from {@code innerState} at this length within the bound. */
    boolean fits(int innerState, int length) {
        return length <= max && inner.minChars(innerState) <= max - length;
    }

    @Override
    public boolean accepts(int state) {
        return inner.accepts(innerState(state));
    }

    @Override
    public int dist(int state) {
        return cost(innerState(state), length(state));
    }

    /** Bytes of a shortest completion from {@code innerState} at {@code length} (the state must fit). */
    int cost(int innerState, int length) {
        return inner.distWithin(innerState, max - length);
    }

    @Override
    public int distAfter(int state, int lo, int hi) {
        int length = length(state) + 1;
        int best = NO_WAY;
        int[] t = inner.transitions(innerState(state));
        for (int i = 0; i < t.length; i += 3) {
            if (t[i] <= hi && t[i + 1] >= lo && fits(t[i + 2], length)) {
                best = Math.min(best, cost(t[i + 2], length));
            }
        }
        return best;
    }
}
