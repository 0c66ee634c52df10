package io.moe4j.backend;

import io.moe4j.routing.Routing;

/**
 * A backend's prepared experts of one layer: the "experts" stage of the modular pipeline. Implementations are
 * thread-safe: concurrent {@code forward} calls keep their per-call state on their own stacks.
 */
public interface Experts extends AutoCloseable {

    /**
     * Writes out[T, H] = Σ_j w_tj · expert_{e_tj}(x_t) for the routed tokens of x [T, H]; with
     * {@link Routing#weightOnInput()} the weight scales the token instead: Σ_j expert_{e_tj}(w_tj · x_t).
     * Experts not held here (expert parallelism) contribute zero.
     */
    void forward(float[] x, int tokens, Routing routing, float[] out);

    /** The backend that made these experts. */
    String backend();

    @Override
    default void close() {
    }
}
