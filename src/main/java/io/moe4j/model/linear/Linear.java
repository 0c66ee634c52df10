package io.moe4j.model.linear;

import java.util.Optional;

/**
 * One {@code nn.Linear} of a decoder (attention projections, dense MLPs, {@code lm_head}) as the checkpoint stores
 * it: y[T, out] = qdq(x)[T, in] · Wᵀ (+ bias), where qdq is the scheme's activation quantize-dequantize (identity
 * for weight-only and unquantized weights). Weights stay packed in checkpoint precision. Thread-safe: concurrent
 * calls keep their per-call state on their own stacks.
 */
public interface Linear extends AutoCloseable {

    int inFeatures();

    int outFeatures();

    /** y[t·out + o] for the {@code tokens} rows of x [tokens, in] (row-major); y is overwritten. */
    void forward(float[] x, int tokens, float[] y);

    /** Bytes of codes, scales and bias that one forward streams (for bandwidth figures). */
    long weightBytes();

    /** Where it runs and in what format, for logs, e.g. {@code "cpu fp8 block 128x128"}. */
    String describe();

    /**
     * The weight dequantized to float32 rows and the input rule, for products the forward does not offer; built on
     * each call (out · in floats), empty where this linear cannot give them or has a bias.
     */
    default Optional<DenseForm> denseForm() {
        return Optional.empty();
    }

    @Override
    default void close() {
    }
}
