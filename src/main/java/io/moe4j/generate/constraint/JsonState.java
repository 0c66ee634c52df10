package io.moe4j.generate.constraint;

import java.util.ArrayList;
import java.util.List;

/**
 * Where a text stands in the grammar: the stacks of every parse still alive (more than one only after anyOf or
 * type lists that agree on a prefix). Immutable; {@link #advance} gives a new state or null.
 */
final class JsonState {
    /**
     * More live parses than this are cut to the first ones: a narrowing, each kept parse stays valid. (A schema
     * for tool_choice keeps one parse a tool alive while a call writes its arguments before its name.)
     */
    static final int MAX_PARSES = 128;

    private final JsonGrammar grammar;
    private final Stack[] stacks;
    private final int cost;
    private final boolean complete;
    private final boolean plain;

    JsonState(JsonGrammar grammar, Stack[] stacks) {
        this.grammar = grammar;
        this.stacks = stacks;
        int c = Integer.MAX_VALUE;
        boolean done = false;
        boolean allPlain = true;
        for (Stack s : stacks) {
            c = Math.min(c, s.cost());
            done |= s.isComplete();
            allPlain &= s.top() instanceof StringFrame f && f.isPlain();
        }
        this.cost = c;
        this.complete = done;
        this.plain = allPlain;
    }

    /** The state after byte b (0..255), or null when no parse takes it. */
    JsonState advance(int b) {
        if (stacks.length == 1) {
            Stack only = stacks[0];
            if (plain && b >= 0x20 && b < 0x80 && b != '"' && b != '\\') {
                return this;
            }
            List<Stack> out = new ArrayList<>(2);
            only.top().step(b, only, grammar, out);
            return out.isEmpty() ? null : new JsonState(grammar, out.toArray(new Stack[0]));
        }
        List<Stack> out = new ArrayList<>(stacks.length + 1);
        for (Stack s : stacks) {
            s.top().step(b, s, grammar, out);
        }
        if (out.isEmpty()) {
            return null;
        }
        int n = Math.min(out.size(), MAX_PARSES);
        return new JsonState(grammar, out.subList(0, n).toArray(new Stack[0]));
    }

    /** The state after all of {@code bytes}, or null when they do not continue a valid prefix. */
    JsonState advance(byte[] bytes) {
        JsonState s = this;
        for (int i = 0; i < bytes.length && s != null; i++) {
            s = s.advance(bytes[i] & 0xFF);
        }
        return s;
    }

    /**
     * The string frame with a rule where the one parse stands between two characters of such a string, else null:
     * each plain token then takes the rule along its code points ({@link JsonConstraint}'s bulk mask).
     */
    RuleStringFrame ruleStringBetweenCharacters() {
        return stacks.length == 1 && stacks[0].top() instanceof RuleStringFrame f && f.chr().isPlain() ? f : null;
    }

    /** With {@link #ruleStringBetweenCharacters}: the cost of the frames below it. */
    int costBelowTop() {
        return stacks[0].cost() - stacks[0].top().cost();
    }

    /** Bytes of the shortest text that completes the document from here (no whitespace). */
    int cost() {
        return cost;
    }

    /** The text so far is a complete document. */
    boolean isComplete() {
        return complete;
    }

    /**
     * Every parse is inside a string with no escape or character pending: plain string content (see
     * {@link TokenTrie#isPlain}) leaves the state as it is.
     */
    boolean isPlainString() {
        return plain;
    }
}
