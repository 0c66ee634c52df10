package io.moe4j.backend.emulation;

import io.moe4j.backend.Experts;
import io.moe4j.backend.TokenGroups;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.routing.Routing;

import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;

/**
 * Experts computed as the reference defines them: for each expert, its tokens' inputs are quantize-dequantized
 * per scheme (a13), multiplied by w13 row by row in double, biased, activated, quantize-dequantized again (a2),
 * multiplied by w2 and summed into the output with the router weight. Only one dequantized row exists at a time.
 */
final class EmulationExperts implements Experts {
    private final ExpertWeights w;
    private final ForkJoinPool pool;

    EmulationExperts(ExpertWeights w, int threads) {
        this.w = w;
        this.pool = threads > 1 ? new ForkJoinPool(threads) : null;
    }

    @Override
    public String backend() {
        return EmulationBackend.NAME;
    }

    @Override
    public void forward(float[] x, int tokens, Routing routing, float[] out) {
        int h = w.hidden();
        if (x.length < tokens * h || out.length < tokens * h) {
            throw new IllegalArgumentException("x and out must hold " + tokens + " × " + h + " values");
        }
        TokenGroups groups = TokenGroups.of(routing, w);
        double[][] perGroup = new double[groups.groups()][];
        Runnable work = () -> IntStream.range(0, groups.groups()).parallel()
                .forEach(g -> perGroup[g] = expert(groups, g, x, routing.weightOnInput()));
        if (pool != null && groups.groups() > 1) {
            pool.submit(work).join();
        } else {
            for (int g = 0; g < groups.groups(); g++) {
                perGroup[g] = expert(groups, g, x, routing.weightOnInput());
            }
        }
        double[] acc = new double[tokens * h];
        for (int g = 0; g < groups.groups(); g++) {
            double[] y = perGroup[g];
            for (int i = 0, p = groups.start()[g]; p < groups.start()[g + 1]; i++, p++) {
                int t = groups.token()[p];
                double scale = routing.weightOnInput() ? 1.0 : groups.weight()[p];
                for (int c = 0; c < h; c++) {
                    acc[t * h + c] += scale * y[i * h + c];
                }
            }
        }
        for (int i = 0; i < tokens * h; i++) {
            out[i] = (float) acc[i];
        }
    }

    /** One expert's outputs [n, H] for its n tokens, unweighted (unless the weight went on the input). */
    private double[] expert(TokenGroups groups, int g, float[] x, boolean weightOnInput) {
        int e = groups.experts()[g];
        int n = groups.size(g);
        int h = w.hidden();
        int inter = w.intermediate();
        float[] xin = new float[n * h];
        for (int i = 0; i < n; i++) {
            int p = groups.start()[g] + i;
            int t = groups.token()[p];
            for (int c = 0; c < h; c++) {
                xin[i * h + c] = weightOnInput ? x[t * h + c] * groups.weight()[p] : x[t * h + c];
            }
            w.a13().qdqInPlace(xin, i * h, h, e);
        }
        double[] h1 = gemm(w.w13(), e, xin, n, w.w13Bias());
        int rows13 = w.w13().rows();
        float[] act = new float[n * inter];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < inter; j++) {
                double v;
                if (w.gateLayout() == GateLayout.NONE) {
                    v = w.activation().plain(h1[i * rows13 + j]);
                } else {
                    int gate = w.gateLayout() == GateLayout.INTERLEAVED ? 2 * j : j;
                    int up = w.gateLayout() == GateLayout.INTERLEAVED ? 2 * j + 1 : inter + j;
                    v = w.activation().gated(h1[i * rows13 + gate], h1[i * rows13 + up], w.swigluLimit());
                }
                act[i * inter + j] = (float) v;
            }
            w.a2().qdqInPlace(act, i * inter, inter, e);
        }
        return gemm(w.w2(), e, act, n, w.w2Bias());
    }

    /** y[n, rows] = in[n, cols] · W_eᵀ + bias_e, in double. */
    private static double[] gemm(ExpertMatrix m, int e, float[] in, int n, float[] bias) {
        int rows = m.rows();
        int cols = m.cols();
        double[] y = new double[n * rows];
        float[] row = new float[cols];
        for (int r = 0; r < rows; r++) {
            MatrixDequantizer.row(m, e, r, row);
            double b = bias == null ? 0 : bias[e * rows + r];
            for (int i = 0; i < n; i++) {
                double acc = 0;
                int base = i * cols;
                for (int c = 0; c < cols; c++) {
                    acc += (double) row[c] * in[base + c];
                }
                y[i * rows + r] = acc + b;
            }
        }
        return y;
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdown();
        }
    }
}
