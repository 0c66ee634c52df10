package io.moe4j.bench.model;

import io.moe4j.model.Model;
import io.moe4j.model.Session;
import io.moe4j.model.StepOutput;
import io.moe4j.model.TokenDraw;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;

/**
 * Times a loaded model at batch 1 the way generation runs it: a short prompt in one pass, then tokens one at a time,
 * each the argmax of the last logits (greedy decoding), so every step routes as real text would through its random
 * weights. Also times a longer prompt's prefill on a fresh session, twice: the first pass of a process compiles the
 * prompt kernels as it goes (on the 2-core Zen 3, gpt-oss-20b shapes with 2 layers, 512 tokens: 60.8 tokens/s, then
 * 179.1 and 165.6), so the second is the prefill's speed and the first what a process's first prompt sees.
 *
 * <p>With {@code batches}, it then times batched decode as a server runs it: that many sessions of different short
 * prompts (8 to 23 tokens) stepped together by {@link Model#step}, each drawing its greedy token where the model
 * draws (on the device for cuda), the same warm-up and timed steps; the median step gives tokens/s over the batch.
 *
 * @param warmupTokens untimed decode steps first (JIT compilation; a cuda batch records its step graph in them)
 * @param decodeTokens timed decode steps; the median is reported
 * @param promptTokens the prefill prompt's length
 * @param batches      batch sizes of batched decode to time after the rest (none: batch 1 only)
 */
public record ModelBench(int warmupTokens, int decodeTokens, int promptTokens, long seed, List<Integer> batches) {
    /** The prompt before the decode steps: a chat turn's worth of tokens. */
    static final int SHORT_PROMPT = 8;

    public ModelBench {
        if (warmupTokens < 0 || decodeTokens < 1 || promptTokens < 1) {
            throw new IllegalArgumentException("decode tokens and prompt tokens must be positive, warm-up at least 0");
        }
        batches = List.copyOf(batches);
        for (int b : batches) {
            if (b < 1) {
                throw new IllegalArgumentException("batch sizes must be positive, got " + b);
            }
        }
    }

    /** Batch 1 only. */
    public ModelBench(int warmupTokens, int decodeTokens, int promptTokens, long seed) {
        this(warmupTokens, decodeTokens, promptTokens, seed, List.of());
    }

    /** Steps {@link #run} reports to its listener: every decode step, warm-up included, and the two prefills. */
    public long steps() {
        return (long) (warmupTokens + decodeTokens) * (1 + batches.size()) + 2;
    }

    /**
     * A batch size's timed steps.
     *
     * @param stepSeconds each timed step's seconds, in order
     */
    public record BatchTiming(int batch, double[] stepSeconds) {
        public double medianStepSeconds() {
            return median(stepSeconds);
        }

        /** Tokens over the whole batch a second. */
        public double tokensPerS() {
            return batch / medianStepSeconds();
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
            double decodeCpuSeconds, List<BatchTiming> batches) {
        public double decodeWallSeconds() {
            return Arrays.stream(decodeSeconds).sum();
        }

        public double medianDecodeSeconds() {
            return median(decodeSeconds);
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
        List<BatchTiming> batched = new ArrayList<>();
        for (int b : batches) {
            batched.add(decodeBatch(model, b, rnd, step));
        }
        return new Timing(decode, prefill, first, promptTokens, cpu / 1e9, batched);
    }

    /** {@code batch} sessions of 8 to 23 prompt tokens stepped together, greedy, drawn where the model draws. */
    private BatchTiming decodeBatch(Model model, int batch, SplittableRandom rnd, IntConsumer step) {
        int vocab = model.vocabSize();
        List<Session> sessions = new ArrayList<>();
        try {
            List<int[]> feed = new ArrayList<>();
            for (int i = 0; i < batch; i++) {
                Session s = model.newSession();
                sessions.add(s);
                float[] logits = s.prefillLast(randomTokens(rnd, SHORT_PROMPT + i % 16, vocab));
                feed.add(new int[] {io.moe4j.model.Logits.argmax(logits, 0, logits.length)});
            }
            TokenDraw[] draws = new TokenDraw[batch];
            Arrays.fill(draws, TokenDraw.greedy());
            double[] seconds = new double[decodeTokens];
            for (int i = 0; i < warmupTokens + decodeTokens; i++) {
                long t0 = System.nanoTime();
                StepOutput out = model.step(sessions, feed, draws);
                long t1 = System.nanoTime();
                if (i >= warmupTokens) {
                    seconds[i - warmupTokens] = (t1 - t0) / 1e9;
                }
                for (int j = 0; j < batch; j++) {
                    // -1 would mean no finite logit, which these weights do not give; token 0 keeps the step going
                    feed.set(j, new int[] {Math.max(0, out.drawn()[j])});
                }
                step.accept(1);
            }
            return new BatchTiming(batch, seconds);
        } finally {
            sessions.forEach(Session::close);
        }
    }

    private static double median(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
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
