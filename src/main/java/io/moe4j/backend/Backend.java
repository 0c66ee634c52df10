package io.moe4j.backend;

import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Router;
import io.moe4j.routing.TokenRouter;

/**
 * A way to run the experts of a layer. Backends are data for the oracle: each says for a problem and platform
 * whether it can run it and why, and then prepares the weights into its kernel layout once.
 */
public interface Backend {

    /** The moe4j name users pass to {@code --backend}. */
    String name();

    /** One line on what it is, for {@code moe backends}. */
    String description();

    Support support(MoeProblem problem, Platform platform);

    /**
     * Whether this backend's kernels can multiply activations in {@code k} at all (its {@link #support} then says
     * for which schemes); by default float only, so the oracle refuses {@link KernelActivations#INT8} by name.
     */
    default boolean computesWith(KernelActivations k) {
        return k == KernelActivations.FLOAT;
    }

    /** Converts the weights into this backend's layout (once, at load). */
    Experts prepare(ExpertWeights weights, ExecutionOptions options);

    /**
     * The layer's router as this backend runs it, beside experts prepared with {@code options}: by default the host
     * router itself; a device backend may copy it to the experts' device so that routing does not cost a host pass
     * over the router weights (same rules and ties).
     */
    default TokenRouter prepareRouter(Router router, ExecutionOptions options) {
        return router;
    }

    /** {@link #prepareRouter(Router, ExecutionOptions)} with the default options (device 0). */
    default TokenRouter prepareRouter(Router router) {
        return prepareRouter(router, ExecutionOptions.defaults());
    }
}
