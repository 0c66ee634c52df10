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

    /**
     * Whether {@link #forward} still reads the memory of the loaded {@code ExpertWeights} (codes, scales) that these
     * experts were prepared from. False where preparing copied them into memory of its own (the CPU's packed
     * panels, the GPU's upload): the loader may then release the loaded copy, which would otherwise stay beside it.
     */
    default boolean readsLoadedWeights() {
        return true;
    }

    @Override
    default void close() {
    }
}
