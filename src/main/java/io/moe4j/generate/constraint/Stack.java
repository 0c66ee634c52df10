package io.moe4j.generate.constraint;

/**
 * A persistent stack of frames: pushing shares the frames below. {@code cost} is the sum of the frames' costs, the
 * bytes of the shortest completion of the whole document from here; {@code depth} counts the frames.
 */
record Stack(Frame top, Stack below, int cost, int depth) {

    static Stack of(Frame top, Stack below) {
        return below == null ? new Stack(top, null, top.cost(), 1)
                : new Stack(top, below, top.cost() + below.cost, below.depth + 1);
    }

    /** This stack with its top frame replaced. */
    Stack replace(Frame top) {
        return of(top, below);
    }

    /** This stack with {@code child} pushed on top. */
    Stack push(Frame child) {
        return of(child, this);
    }

    /** The stack after the top frame's value ended: the parent told of it. */
    Stack pop() {
        return of(below.top.childDone(), below.below);
    }

    /** The whole document is a complete JSON text here. */
    boolean isComplete() {
        if (top instanceof RootFrame root) {
            return root.isDone();
        }
        return top.canEnd() && below.top instanceof RootFrame;
    }
}
