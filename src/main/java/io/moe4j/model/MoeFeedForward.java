package io.moe4j.model;

import io.moe4j.layer.MoeLayer;

/** A decoder layer's MoE block, run by the layer engine as is. */
public final class MoeFeedForward implements FeedForward {
    private final MoeLayer layer;

    public MoeFeedForward(MoeLayer layer) {
        this.layer = layer;
    }

    @Override
    public float[] forward(float[] x, int tokens) {
        return layer.forward(x, tokens).output();
    }

    public MoeLayer layer() {
        return layer;
    }

    @Override
    public void close() {
        layer.close();
    }
}
