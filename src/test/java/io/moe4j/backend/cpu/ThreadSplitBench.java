package io.moe4j.backend.cpu;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.quant.ExpertWeights;
import java.lang.foreign.Arena;

/**
 * One token through 8 experts' w2 (H rows of I columns each) in row blocks over a pool of one thread and a pool of
 * two, alternated, best and mean of 2,000 calls a round (the last three of 12 rounds printed): how well the fused
 * kernels split over workers, apart from the rest of the layer. The two workers' {@link Scratch} buffers are
 * allocated one after the other, as a layer's are. Usage: {@code bin/bench io.moe4j.backend.cpu.ThreadSplitBench
 * SCHEME H I BLOCK_ROWS} (scheme as the enum's name, e.g. {@code W8A16 2048 256 256}: Qwen3's down projection at the
 * like-for-like width of docs/cpu-decode.md).
 */
public final class ThreadSplitBench {
    private ThreadSplitBench() {
    }

    public static void main(String[] a) {
        if (a.length < 4) {
            throw new IllegalArgumentException("usage: ThreadSplitBench SCHEME H I BLOCK_ROWS");
        }
        SyntheticScheme scheme = SyntheticScheme.valueOf(a[0]);
        int hidden = Integer.parseInt(a[1]), inter = Integer.parseInt(a[2]);
        int blockRows = Integer.parseInt(a[3]);
        int experts = 8;
        try (Arena arena = Arena.ofShared(); WorkerPool one = new WorkerPool(1); WorkerPool two = new WorkerPool(2)) {
            SyntheticWeights.Shape shape = new SyntheticWeights.Shape(experts, hidden, inter, GateLayout.CONCATENATED, Activation.SILU_AND_MUL, false);
            ExpertWeights w = SyntheticWeights.generate(scheme, shape, 1, arena, b -> { });
            PanelMatrix m = PanelPacker.pack(w.w2(), arena, two);
            VectorKernels k = new VectorKernels();
            float[] x = SyntheticWeights.inputs(1, inter, 3);
            Inputs[] in = new Inputs[experts];
            for (int e = 0; e < experts; e++) in[e] = k.prepare(m, e, x, 0, 1);
            Scratch[] sc = {new Scratch(), new Scratch()};
            sc[0].fit(m); sc[1].fit(m);
            float[] y = new float[experts * hidden];
            int blocks = Math.ceilDiv(hidden, blockRows);
            for (int r = 0; r < 12; r++) {
                for (WorkerPool p : new WorkerPool[] {one, two}) {
                    long best = Long.MAX_VALUE;
                    for (int i = 0; i < 2000; i++) {
                        long t0 = System.nanoTime();
                        p.run(experts * blocks, (task, worker) -> {
                            int e = task / blocks, r0 = (task % blocks) * blockRows, r1 = Math.min(hidden, r0 + blockRows);
                            k.multiply(m, e, r0, r1, in[e], y, e * hidden, hidden, sc[worker]);
                        });
                        long t = System.nanoTime() - t0;
                        best = Math.min(best, t);
                    }
                    long t0 = System.nanoTime();
                    for (int i = 0; i < 2000; i++) {
                        p.run(experts * blocks, (task, worker) -> {
                            int e = task / blocks, r0 = (task % blocks) * blockRows, r1 = Math.min(hidden, r0 + blockRows);
                            k.multiply(m, e, r0, r1, in[e], y, e * hidden, hidden, sc[worker]);
                        });
                    }
                    double mean = (System.nanoTime() - t0) / 2000e3;
                    if (r >= 9) System.out.printf("%s %s %dx%d threads %d: best %.1f us mean %.1f us%n", scheme, a[3], hidden, inter, p.threads(), best / 1e3, mean);
                }
            }
        }
    }
}
