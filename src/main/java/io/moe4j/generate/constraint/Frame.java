package io.moe4j.generate.constraint;

import java.util.List;

/**
 * One level of the matcher's stack: where the text stands inside one JSON value. Frames are immutable, so a state
 * can be advanced along many token paths at once (the vocabulary walk) without copying.
 */
sealed interface Frame permits RootFrame, ObjectFrame, ArrayFrame, StringFrame, RuleStringFrame, NumberFrame,
        RuleNumberFrame, LiteralFrame {

    /**
     * Feeds byte {@code b} (0..255) to the stack {@code self} whose top is this frame and adds each stack that
     * results to {@code out}; adds nothing when the byte cannot come next.
     */
    void step(int b, Stack self, JsonGrammar grammar, List<Stack> out);

    /**
     * Bytes still needed to finish this frame's value at the shortest, counting from the end of the child value in
     * progress when there is one (the child's frame counts its own part).
     */
    int cost();

    /** The value may end right here (a number or literal that a following byte could still extend). */
    default boolean canEnd() {
        return false;
    }

    /** This container after the value its child frame held has ended. */
    default Frame childDone() {
        throw new IllegalStateException(getClass().getSimpleName() + " holds no child value");
    }

    static boolean isWhitespace(int b) {
        return b == ' ' || b == '\n' || b == '\r' || b == '\t';
    }
}
