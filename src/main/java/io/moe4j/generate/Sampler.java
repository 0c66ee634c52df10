package io.moe4j.generate;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Draws token ids from logits by {@link SamplingParams}. One sampler belongs to one sequence: it holds that
 * sequence's random generator, so the same seed and the same logits give the same tokens.
 */
public final class Sampler {
    private final SamplingParams params;
    private final SplittableRandom random;

    public Sampler(SamplingParams params) {
        this.params = params;
        this.random = new SplittableRandom(params.seed());
    }

    public SamplingParams params() {
        return params;
    }

    /** The next token from logits[off, off + vocab). */
    public int sample(float[] logits, int off, int vocab) {
        return sample(logits, off, vocab, null);
    }

    /**
     * The next token among those {@code allowed} marks (all when null): a constraint such as a grammar narrows the
     * choice before any warper runs. Fails if nothing is allowed.
     */
    public int sample(float[] logits, int off, int vocab, boolean[] allowed) {
        if (params.isGreedy()) {
            return argmax(logits, off, vocab, allowed);
        }
        boolean cuts = params.topK() > 0 || params.topP() < 1 || params.minP() > 0;
        if (!cuts) {
            return drawUnsorted(logits, off, vocab, allowed);
        }
        // Candidates sorted by logit, highest first; ties: lower id first, so draws are reproducible. A key packs
        // the logit's order (inverted: sorting ascends) above the id, so one primitive sort does it.
        long[] keys = new long[vocab];
        int n = 0;
        for (int i = 0; i < vocab; i++) {
            float v = logits[off + i];
            if ((allowed == null || allowed[i]) && v != Float.NEGATIVE_INFINITY && !Float.isNaN(v)) {
                keys[n++] = ((long) ~orderedBits(v) << 32) | i;
            }
        }
        if (n == 0) {
            throw new IllegalStateException("no token is allowed at this step");
        }
        Arrays.sort(keys, 0, n);
        int[] boxed = new int[n];
        for (int i = 0; i < n; i++) {
            boxed[i] = (int) keys[i];
        }
        int keep = params.topK() > 0 ? Math.min(params.topK(), n) : n;
        double max = logits[off + boxed[0]] / params.temperature();
        double[] p = new double[keep];
        double sum = 0;
        for (int i = 0; i < keep; i++) {
            p[i] = Math.exp(logits[off + boxed[i]] / params.temperature() - max);
            sum += p[i];
        }
        // top-p: the smallest prefix whose mass reaches p (the token that crosses it stays).
        if (params.topP() < 1) {
            double acc = 0;
            for (int i = 0; i < keep; i++) {
                acc += p[i] / sum;
                if (acc >= params.topP()) {
                    keep = i + 1;
                    break;
                }
            }
        }
        // min-p: relative to the most likely token, whose probability is p[0] / sum.
        if (params.minP() > 0) {
            double floor = params.minP() * p[0];
            int k = 1;
            while (k < keep && p[k] >= floor) {
                k++;
            }
            keep = k;
        }
        double total = 0;
        for (int i = 0; i < keep; i++) {
            total += p[i];
        }
        double r = random.nextDouble() * total;
        for (int i = 0; i < keep; i++) {
            r -= p[i];
            if (r < 0) {
                return boxed[i];
            }
        }
        return boxed[keep - 1];
    }

    /** Draws from the whole tempered distribution in one pass over the vocabulary, without sorting. */
    private int drawUnsorted(float[] logits, int off, int vocab, boolean[] allowed) {
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            if (allowed == null || allowed[i]) {
                max = Math.max(max, logits[off + i]);
            }
        }
        if (max == Double.NEGATIVE_INFINITY) {
            return argmax(logits, off, vocab, allowed);
        }
        double t = params.temperature();
        double total = 0;
        double[] p = new double[vocab];
        for (int i = 0; i < vocab; i++) {
            if (allowed == null || allowed[i]) {
                p[i] = Math.exp((logits[off + i] - max) / t);
                total += p[i];
            }
        }
        double r = random.nextDouble() * total;
        int last = -1;
        for (int i = 0; i < vocab; i++) {
            if (p[i] > 0) {
                last = i;
                r -= p[i];
                if (r < 0) {
                    return i;
                }
            }
        }
        return last;
    }

    /** Float bits as a signed int that orders like the float (negative floats have their magnitude bits flipped). */
    private static int orderedBits(float v) {
        int bits = Float.floatToIntBits(v);
        return bits ^ ((bits >> 31) & 0x7fffffff);
    }

    /** The highest logit's id, lowest id on ties; among allowed ids only when a mask is given. */
    public static int argmax(float[] logits, int off, int vocab, boolean[] allowed) {
        if (allowed == null) {
            return io.moe4j.model.Logits.argmax(logits, off, vocab); // the rule a device runtime follows too
        }
        int best = -1;
        float bestValue = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            if (allowed != null && !allowed[i]) {
                continue;
            }
            float v = logits[off + i];
            if (best < 0 || v > bestValue) {
                best = i;
                bestValue = v;
            }
        }
        if (best < 0) {
            throw new IllegalStateException("no token is allowed at this step");
        }
        return best;
    }
}
