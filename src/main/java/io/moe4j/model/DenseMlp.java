package io.moe4j.model;

import io.moe4j.model.linear.Linear;

/** The dense SwiGLU MLP: down(silu(gate(x)) · up(x)). */
public final class DenseMlp implements FeedForward {
    private final Linear gate;
    private final Linear up;
    private final Linear down;

    public DenseMlp(Linear gate, Linear up, Linear down) {
        this.gate = gate;
        this.up = up;
        this.down = down;
    }

    @Override
    public float[] forward(float[] x, int tokens) {
        int inter = gate.outFeatures();
        float[] g = new float[tokens * inter];
        float[] u = new float[tokens * inter];
        gate.forward(x, tokens, g);
        up.forward(x, tokens, u);
        for (int i = 0; i < g.length; i++) {
            g[i] = FloatMath.flushSubnormal(FloatMath.silu(g[i]) * u[i]);
        }
        float[] y = new float[tokens * down.outFeatures()];
        down.forward(g, tokens, y);
        return y;
    }

    @Override
    public void close() {
        gate.close();
        up.close();
        down.close();
    }
}
