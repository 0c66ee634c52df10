package io.moe4j.model.linear;

import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.quant.QuantScheme;

import java.util.Arrays;
import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;

/**
 * A linear computed as the reference defines it, the way the emulation backend computes experts: each token's input
 * is quantize-dequantized by the scheme's rule, then every output row is dequantized ({@link MatrixDequantizer}, one
 * row at a time) and multiplied with the inputs in float64; the bias is added in float64 before rounding to float32.
 */
final class EmulationLinear implements LoadedLinear {
    /** Rows per parallel task. */
    private static final int ROWS_PER_TASK = 64;

    private final String module;
    private final LinearWeights w;
    private final float[] bias;
    private final ForkJoinPool pool;

    /** @param pool the factory's pool to spread rows over, or null to run on the calling thread */
    EmulationLinear(String module, LinearWeights w, float[] bias, ForkJoinPool pool) {
        this.module = module;
        this.w = w;
        this.bias = bias;
        this.pool = pool;
    }

    @Override
    public int inFeatures() {
        return w.inFeatures();
    }

    @Override
    public int outFeatures() {
        return w.outFeatures();
    }

    @Override
    public QuantScheme scheme() {
        return w.scheme();
    }

    @Override
    public void forward(float[] x, int tokens, float[] y) {
        int in = inFeatures();
        int out = outFeatures();
        Shapes.check(module, x, tokens, in, y, out);
        float[] q = Arrays.copyOf(x, tokens * in);
        for (int t = 0; t < tokens; t++) {
            w.input().qdqInPlace(q, t * in, in, 0);
        }
        int tasks = Math.ceilDiv(out, ROWS_PER_TASK);
        if (pool == null || tasks == 1) {
            for (int task = 0; task < tasks; task++) {
                rows(task, q, tokens, y);
            }
        } else {
            pool.submit(() -> IntStream.range(0, tasks).parallel().forEach(task -> rows(task, q, tokens, y))).join();
        }
    }

    /** Output rows [task·64, …) of every token. */
    private void rows(int task, float[] q, int tokens, float[] y) {
        ExpertMatrix m = w.weight();
        int in = m.cols();
        int out = m.rows();
        float[] row = new float[in];
        for (int r = task * ROWS_PER_TASK, end = Math.min(out, r + ROWS_PER_TASK); r < end; r++) {
            MatrixDequantizer.row(m, 0, r, row);
            double b = bias == null ? 0 : bias[r];
            for (int t = 0; t < tokens; t++) {
                double acc = 0;
                int base = t * in;
                for (int c = 0; c < in; c++) {
                    acc += (double) row[c] * q[base + c];
                }
                y[t * out + r] = (float) (acc + b);
            }
        }
    }

    @Override
    public long weightBytes() {
        return w.weight().bytesPerExpert() + (bias == null ? 0 : 4L * bias.length);
    }

    @Override
    public String describe() {
        return "emulation " + w.scheme().name();
    }
}
