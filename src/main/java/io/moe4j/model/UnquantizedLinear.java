package io.moe4j.model;

import io.moe4j.model.linear.Linear;
import io.moe4j.safetensors.Tensor;

/**
 * An unquantized linear: y = x · Wᵀ (+ b) on a bf16, f16 or f32 weight [out, in] read straight from the mapped
 * checkpoint. One weight row is decoded at a time and dotted with every token, so each weight is read once per call.
 */
public final class UnquantizedLinear implements Linear {
    private final Tensor weight;
    private final float[] bias;
    private final int in;
    private final int out;

    public UnquantizedLinear(Tensor weight, float[] bias, int in, int out) {
        this.weight = weight;
        this.bias = bias;
        this.in = in;
        this.out = out;
    }

    @Override
    public int inFeatures() {
        return in;
    }

    @Override
    public int outFeatures() {
        return out;
    }

    @Override
    public void forward(float[] x, int tokens, float[] y) {
        float[] xs = FloatMath.withoutSubnormals(x, tokens * in);
        float[] row = new float[in];
        long base = 0;
        for (int o = 0; o < out; o++, base += in) {
            for (int i = 0; i < in; i++) {
                row[i] = FloatMath.flushSubnormal(weight.getFloat(base + i));
            }
            float b = bias == null ? 0f : bias[o];
            for (int t = 0; t < tokens; t++) {
                y[t * out + o] = FloatMath.dot(xs, t * in, row, 0, in) + b;
            }
        }
    }

    @Override
    public long weightBytes() {
        return weight.info().byteSize() + (bias == null ? 0 : 4L * bias.length);
    }

    @Override
    public String describe() {
        return "unquantized " + weight.dtype() + " [" + out + ", " + in + "]";
    }
}
