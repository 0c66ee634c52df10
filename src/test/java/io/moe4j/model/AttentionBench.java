package io.moe4j.model;

import io.moe4j.model.linear.DenseForm;
import io.moe4j.model.linear.Linear;

import java.util.Arrays;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * Times one decode step of the CPU attention alone at long contexts: the cache filled with random rows, the
 * projections replaced by linears that only fill their outputs (so the step is the attention's own arithmetic), at
 * the shapes of gpt-oss-20b (64 query heads over 8 KV heads of 64, sinks), Qwen3-30B-A3B (32 over 4, heads of 128)
 * and DeepSeek-V3's latent attention (128 heads, latent 512 + rope 64). Prints the median step and the attention's
 * multiply-adds per second (after 40 untimed steps).
 *
 * <p>Usage: {@code bin/bench AttentionBench [threads] [context...]} (default: 2 threads, 1024 and 4096 positions).
 * With {@code -Dexpanded=true} the latent attention also runs expanded (kv_b_proj over the whole context each step,
 * as it did before absorbing), which takes seconds a step.
 */
public final class AttentionBench {
    private static final int STEPS = 15;
    /** Untimed steps first: the block kernels are large methods that C2 compiles only after many calls. */
    private static final int WARMUP = 40;

    private AttentionBench() {
    }

    public static void main(String[] args) {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int[] contexts = args.length > 1 ? Arrays.stream(args, 1, args.length).mapToInt(Integer::parseInt).toArray()
                : new int[] {1024, 4096};
        try (Parallel parallel = new Parallel(threads)) {
            for (int context : contexts) {
                gqa("gpt-oss-20b", 2880, 64, 8, 64, true, context, parallel);
                gqa("qwen3-30b-a3b", 2048, 32, 4, 128, false, context, parallel);
                mla(context, parallel, LatentAttention.Path.ABSORBED);
                if (Boolean.getBoolean("expanded")) {
                    mla(context, parallel, LatentAttention.Path.EXPANDED);
                }
            }
        }
    }

    private static void gqa(String name, int hidden, int heads, int kvHeads, int d, boolean sinks, int context,
                            Parallel parallel) {
        GqaSpec spec = new GqaSpec(heads, kvHeads, d, false, sinks, GqaSpec.QkNorm.NONE, null, AttentionWindow.FULL,
                null, (float) (1 / Math.sqrt(d)));
        float[] sinkLogits = sinks ? fill(new float[heads], 3) : null;
        GroupedQueryAttention a = new GroupedQueryAttention(spec, new Filler(hidden, heads * d),
                new Filler(hidden, kvHeads * d), new Filler(hidden, kvHeads * d), new Filler(heads * d, hidden), null,
                null, sinkLogits, parallel);
        long macs = 2L * heads * (context + 1) * d;
        report(name + " GQA", context, time(a, hidden, context), macs, parallel.threads());
    }

    private static void mla(int context, Parallel parallel, LatentAttention.Path path) {
        int hidden = 7168;
        int heads = 128;
        int lora = 512;
        int rope = 64;
        int nope = 128;
        int v = 128;
        float[] invFreq = new float[rope / 2];
        for (int i = 0; i < invFreq.length; i++) {
            invFreq[i] = (float) Math.pow(10000, -2.0 * i / rope);
        }
        MlaSpec spec = new MlaSpec(heads, 1536, lora, nope, rope, v, false, new Rope(invFreq, 1f, false), 1e-6f,
                0.07f);
        float[] kvB = fill(new float[heads * (nope + v) * lora], 4);
        for (int i = 0; i < kvB.length; i++) {
            kvB[i] *= 0.04f;
        }
        LatentAttention a = new LatentAttention(spec, new Filler(hidden, 1536), new RmsNorm(null, 1e-6f),
                new Filler(1536, heads * (nope + rope)), new Filler(hidden, lora + rope), new RmsNorm(null, 1e-6f),
                new DenseFiller(kvB, lora, heads * (nope + v)), new Filler(heads * v, hidden), parallel,
                LatentAttention.EXPAND_BLOCK, path);
        long macs = (long) heads * (context + 1) * (2L * lora + rope) + 2L * heads * (nope + v) * lora / 2;
        report("deepseek-v3 MLA " + path.name().toLowerCase(), context, time(a, hidden, context), macs,
                parallel.threads());
    }

    /** Median ms of a one-token step at {@code context} cached positions (the new row dropped after each). */
    private static double time(Attention a, int hidden, int context) {
        KvBuffer cache = a.newCache();
        cache.append(fill(new float[context * cache.width()], 5), context);
        float[] x = fill(new float[hidden], 6);
        double[] ms = new double[STEPS];
        for (int i = -WARMUP; i < STEPS; i++) {
            long t0 = System.nanoTime();
            a.forward(x, 1, context, cache);
            long t1 = System.nanoTime();
            cache.truncate(context);
            if (i >= 0) {
                ms[i] = (t1 - t0) / 1e6;
            }
        }
        Arrays.sort(ms);
        return ms[STEPS / 2];
    }

    private static void report(String what, int context, double ms, long macs, int threads) {
        System.out.printf("%-30s context %6d  %8.2f ms a step  %6.2f G multiply-adds/s (%d threads)%n", what, context,
                ms, macs / ms / 1e6, threads);
    }

    private static float[] fill(float[] x, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) (r.nextDouble() * 2 - 1);
        }
        return x;
    }

    /** A projection that costs nothing: its outputs are fixed values in (-1, 1). */
    private record Filler(int inFeatures, int outFeatures) implements Linear {
        @Override
        public void forward(float[] x, int tokens, float[] y) {
            for (int i = 0; i < tokens * outFeatures; i++) {
                y[i] = ((i * 0x9E3779B9) >>> 8) * 0x1p-23f - 1f;
            }
        }

        @Override
        public long weightBytes() {
            return 0;
        }

        @Override
        public String describe() {
            return "bench filler";
        }
    }

    /** kv_b_proj as float rows: a real product (for the expanded path) and its dense form (for the absorbed). */
    private record DenseFiller(float[] w, int inFeatures, int outFeatures) implements Linear {
        @Override
        public void forward(float[] x, int tokens, float[] y) {
            for (int t = 0; t < tokens; t++) {
                for (int o = 0; o < outFeatures; o++) {
                    y[t * outFeatures + o] = AttentionMath.dot(x, t * inFeatures, w, o * inFeatures, inFeatures);
                }
            }
        }

        @Override
        public Optional<DenseForm> denseForm() {
            return Optional.of(new DenseForm(inFeatures, outFeatures, w, DenseForm.InputRule.IDENTITY));
        }

        @Override
        public long weightBytes() {
            return 4L * w.length;
        }

        @Override
        public String describe() {
            return "bench dense";
        }
    }
}
