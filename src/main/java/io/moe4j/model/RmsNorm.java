package io.moe4j.model;

/**
 * RMSNorm: x / sqrt(mean(x²) + eps) · weight, per row; without a weight it is Llama-4's {@code L2Norm}. The mean
 * of squares is summed in double, as close as cheap to the float64 reference.
 */
public record RmsNorm(float[] weight, float eps) {

    /** Normalizes the n values of v at off in place. */
    public void apply(float[] v, int off, int n) {
        double sum = 0;
        for (int i = 0; i < n; i++) {
            double x = v[off + i];
            sum += x * x;
        }
        double inv = 1.0 / Math.sqrt(sum / n + eps);
        for (int i = 0; i < n; i++) {
            float normed = (float) (v[off + i] * inv);
            v[off + i] = FloatMath.flushSubnormal(weight == null ? normed : weight[i] * normed);
        }
    }

    /** A normalized copy of each of the {@code rows} rows of width n. */
    public float[] applyRows(float[] x, int rows, int n) {
        float[] out = java.util.Arrays.copyOf(x, rows * n);
        for (int r = 0; r < rows; r++) {
            apply(out, r * n, n);
        }
        return out;
    }
}
