package io.moe4j.model;

/** The feed-forward block of one decoder layer: a dense MLP or an MoE block. */
public interface FeedForward extends AutoCloseable {

    /** y [tokens, hidden] for x [tokens, hidden] (no residual). */
    float[] forward(float[] x, int tokens);

    @Override
    void close();
}
