package io.moe4j.generate.constraint;

import java.util.List;

/**
 * Inside a JSON number held to bounds ({@code minimum}, {@code maximum}, exclusive or not): an automaton over the
 * number's bytes ({@link NumberRanges}) takes each byte; like {@link NumberFrame}, the number ends at the first byte
 * it does not take, where the automaton accepts, and that byte goes to the enclosing value.
 *
 * @param cost bytes to the shortest accepted number from here
 */
record RuleNumberFrame(StringRule rule, int state, int cost) implements Frame {

    /** The frame after the number's first byte, or null when b cannot start a number in range. */
    static RuleNumberFrame first(StringRule rule, int b) {
        return at(rule, rule.step(rule.start(), b));
    }

    private static RuleNumberFrame at(StringRule rule, int state) {
        return state == StringRule.DEAD ? null : new RuleNumberFrame(rule, state, rule.dist(state));
    }

    @Override
    public void step(int b, Stack self, JsonGrammar grammar, List<Stack> out) {
        RuleNumberFrame next = at(rule, rule.step(state, b));
        if (next != null) {
            out.add(self.replace(next));
        } else if (canEnd()) {
            Stack parent = self.pop();
            parent.top().step(b, parent, grammar, out);
        }
    }

    @Override
    public boolean canEnd() {
        return rule.accepts(state);
    }
}
