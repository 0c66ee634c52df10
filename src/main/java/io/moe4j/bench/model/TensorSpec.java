package io.moe4j.bench.model;

import io.moe4j.safetensors.DType;

/**
 * One tensor the synthetic writer writes, with what it is for in a decode step.
 *
 * @param role what reads it, for the bytes a token reads
 */
record TensorSpec(String name, DType dtype, long[] shape, Fill fill, Role role) {

    /** Which part of a decode step reads a tensor, and how much of it. */
    enum Role {
        /** One row a token. */
        EMBEDDING,
        /** q/k/v/o and MLA projections, biases and sinks: all of it. */
        ATTENTION,
        /** Routed experts: top-k of the layer's experts, so top-k / experts of it. */
        EXPERTS,
        /** Dense MLPs, shared experts, the router: all of it. */
        DENSE,
        /** RMSNorm weights: all of it. */
        NORM,
        /** All of it. */
        LM_HEAD
    }

    long bytes() {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return Math.multiplyExact(n, (long) dtype.bits()) / 8;
    }
}
