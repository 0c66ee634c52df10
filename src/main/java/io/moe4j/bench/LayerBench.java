package io.moe4j.bench;

import io.moe4j.backend.Experts;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;

import java.util.BitSet;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;

/**
 * Times a layer's experts on batches of one size: untimed warm-up calls, then timed ones. Random routing gives every
 * call a fresh draw of top-k distinct experts per token, so each call streams weights it did not just read, from
 * DRAM, as real decoding does; fixed routing repeats one draw, so the same experts stay as warm in cache as they can.
 * Each call's routing is drawn before its clock starts.
 */
public final class LayerBench {
    private final ExpertWeights weights;
    private final int topK;
    private final long seed;

    public LayerBench(ExpertWeights weights, int topK, long seed) {
        this.weights = weights;
        this.topK = topK;
        this.seed = seed;
    }

    /**
     * Untimed calls until {@code minSeconds} have passed and at least {@code minCalls} were made (the JIT compiles the
     * kernels over the first few dozen calls); {@code progress} is told each call. Returns the calls made.
     */
    public int warmUp(Experts experts, int tokens, boolean fixedRouting, int minCalls, double minSeconds,
                      IntConsumer progress) {
        float[] x = SyntheticWeights.inputs(tokens, weights.hidden(), seed ^ tokens);
        float[] out = new float[tokens * weights.hidden()];
        SplittableRandom rnd = new SplittableRandom(seed * 17 + tokens);
        Routing fixed = fixedRouting(tokens);
        long until = System.nanoTime() + (long) (minSeconds * 1e9);
        int calls = 0;
        while (calls < minCalls || System.nanoTime() < until) {
            experts.forward(x, tokens, fixedRouting ? fixed : randomRouting(tokens, rnd), out);
            calls++;
            progress.accept(1);
        }
        return calls;
    }

    /** Timed calls continue until at least this long has passed, so that millisecond calls are averaged enough. */
    static final double MIN_TIMED_SECONDS = 0.5;

    /**
     * At least {@code iterations} timed calls and {@value #MIN_TIMED_SECONDS} s of them; each call's routing is
     * drawn before its clock starts. {@code progress} is told each of the first {@code iterations} calls.
     */
    public Timing measure(Experts experts, int tokens, boolean fixedRouting, int iterations, IntConsumer progress) {
        int h = weights.hidden();
        float[] x = SyntheticWeights.inputs(tokens, h, seed ^ tokens);
        float[] out = new float[tokens * h];
        SplittableRandom rnd = new SplittableRandom(seed * 31 + tokens);
        Routing fixed = fixedRouting(tokens);
        long nanos = 0;
        long bytes = 0;
        double flops = 0;
        int calls = 0;
        while (calls < iterations || nanos < MIN_TIMED_SECONDS * 1e9) {
            Routing r = fixedRouting ? fixed : randomRouting(tokens, rnd);
            long t0 = System.nanoTime();
            experts.forward(x, tokens, r, out);
            nanos += System.nanoTime() - t0;
            bytes += distinctExperts(r) * weights.bytesPerExpert();
            flops += flops(r);
            calls++;
            if (calls <= iterations) {
                progress.accept(1);
            }
        }
        return new Timing(calls, nanos / 1e9 / calls, bytes / calls, nanos / 1e9, bytes, flops);
    }

    /** Mean seconds and weight bytes per call, and the totals of the calls they come from. */
    public record Timing(int calls, double secondsPerCall, long bytesPerCall, double totalSeconds, long totalBytes,
                         double totalFlops) {
        public double effectiveGbps() {
            return totalBytes / totalSeconds / 1e9;
        }

        public double gflops() {
            return totalFlops / totalSeconds / 1e9;
        }
    }

    /**
     * The one draw that fixed routing repeats, the same for warm-up and timing: the timed calls then find their
     * experts in cache and their kernels compiled (a warm-up on another draw can leave a path, such as an expert
     * with more tokens than the fused kernels take, to be compiled while the clock runs).
     */
    Routing fixedRouting(int tokens) {
        return randomRouting(tokens, new SplittableRandom(seed * 31 + tokens));
    }

    /** Each token: top-k distinct experts drawn uniformly, sorted by id, with positive weights summing to 1. */
    public Routing randomRouting(int tokens, SplittableRandom rnd) {
        int e = weights.globalExperts();
        int[] ids = new int[tokens * topK];
        float[] w = new float[tokens * topK];
        for (int t = 0; t < tokens; t++) {
            int[] pick = rnd.ints(0, e).distinct().limit(topK).sorted().toArray();
            float sum = 0;
            for (int j = 0; j < topK; j++) {
                ids[t * topK + j] = pick[j];
                w[t * topK + j] = (float) (0.05 + rnd.nextDouble());
                sum += w[t * topK + j];
            }
            for (int j = 0; j < topK; j++) {
                w[t * topK + j] /= sum;
            }
        }
        return new Routing(tokens, topK, ids, w, false);
    }

    private long distinctExperts(Routing r) {
        BitSet used = new BitSet();
        for (int id : r.ids()) {
            if (weights.localExpert(id) >= 0) {
                used.set(id);
            }
        }
        return used.cardinality();
    }

    /** Multiply-adds of both GEMMs over the routed (token, expert) pairs, two flops each. */
    private double flops(Routing r) {
        long perPair = (long) weights.w13().rows() * weights.hidden() + (long) weights.hidden() * weights.intermediate();
        long pairs = 0;
        for (int id : r.ids()) {
            if (weights.localExpert(id) >= 0) {
                pairs++;
            }
        }
        return 2.0 * perPair * pairs;
    }
}
