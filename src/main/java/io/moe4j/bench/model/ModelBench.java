package io.moe4j.bench.model;

import io.moe4j.model.Model;
import io.moe4j.model.Session;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;

/**
 * Times a loaded model at batch 1 the way generation runs it: a short prompt in one pass, then tokens one at a time,
 * each the argmax of the last logits (greedy decoding), so every step routes as real text would through its random
 * weights. Also times a longer prompt's prefill on a fresh session, twice: the first pass of a process compiles the
 * prompt kernels as it goes (on the 2-core Zen 3, gpt-oss-20b shapes with 2 layers, 512 tokens: 60.8 tokens/s, then
 * 179.1 and 165.6), so the second is the prefill's speed and the first what a process's first prompt sees.
 *
 * @param warmupTokens untimed decode steps first (JIT compilation)
 * @param decodeTokens timed decode steps; the median is reported
 * @param promptTokens the prefill prompt's length
 */
public record ModelBench(int warmupTokens, int decodeTokens, int promptTokens, long seed) {
    /** The prompt before the decode steps: a chat turn's worth of tokens. */
    static final int SHORT_PROMPT = 8;

    public ModelBench {
        if (warmupTokens < 0 || decodeTokens < 1 || promptTokens < 1) {
            throw new IllegalArgumentException("decode tokens and prompt tokens must be positive, warm-up at least 0");
        }
    }

    /**
     * @param decodeSeconds  each timed decode step's seconds, in order
     * @param prefillSeconds the prompt's second pass (the kernels compiled)
     * @param firstPrefillSeconds the prompt's first pass, on a fresh session before it
     * @param decodeCpuSeconds the process's CPU time over the timed decode steps: far below their wall time times
     *                         the threads, it says the machine was busy with other work (or the workers idle)
     */
    public record Timing(double[] decodeSeconds, double prefillSeconds, double firstPrefillSeconds, int promptTokens,
            double decodeCpuSeconds) {
        public double decodeWallSeconds() {
            return Arrays.stream(decodeSeconds).sum();
        }

        public double medianDecodeSeconds() {
            double[] s = decodeSeconds.clone();
            Arrays.sort(s);
            int n = s.length;
            return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        }

        public double decodeTokensPerS() {
            return 1 / medianDecodeSeconds();
        }

        public double prefillTokensPerS() {
            return promptTokens / prefillSeconds;
        }

        public double firstPrefillTokensPerS() {
            return promptTokens / firstPrefillSeconds;
        }
    }

    /** Runs the bench; {@code step} hears of every decode step (warm-up included) and each prefill, for a bar. */
    public Timing run(Model model, IntConsumer step) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int vocab = model.vocabSize();
        double[] decode = new double[decodeTokens];
        long cpu = 0;
        try (Session s = model.newSession()) {
            float[] first = s.prefillLast(randomTokens(rnd, SHORT_PROMPT, vocab));
            int next = io.moe4j.model.Logits.argmax(first, 0, first.length);
            for (int i = 0; i < warmupTokens + decodeTokens; i++) {
                long c0 = processCpuNanos();
                long t0 = System.nanoTime();
                next = s.decodeGreedy(next); // as greedy generation runs: the model picks the token
                long t1 = System.nanoTime();
                if (i >= warmupTokens) {
                    decode[i - warmupTokens] = (t1 - t0) / 1e9;
                    cpu += processCpuNanos() - c0;
                }
                step.accept(1);
            }
        }
        int[] prompt = randomTokens(rnd, promptTokens, vocab);
        double first = prefill(model, prompt);
        step.accept(1);
        double prefill = prefill(model, prompt);
        step.accept(1);
        return new Timing(decode, prefill, first, promptTokens, cpu / 1e9);
    }

    /** Seconds of one pass of {@code prompt} through a fresh session. */
    private static double prefill(Model model, int[] prompt) {
        try (Session s = model.newSession()) {
            long t0 = System.nanoTime();
            s.prefillLast(prompt);
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static int[] randomTokens(SplittableRandom rnd, int n, int vocab) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = rnd.nextInt(vocab);
        }
        return t;
    }
}
