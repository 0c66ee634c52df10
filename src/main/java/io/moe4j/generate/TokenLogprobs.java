package io.moe4j.generate;

import io.moe4j.backend.cpu.VectorExp;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The log-probability of a drawn token and of the most likely ones, under the model's own distribution: the log
 * softmax of the raw logits, before penalties, biases, temperature, cuts and constraints (vLLM's default,
 * {@code raw_logprobs}). A value the logits make -infinity or NaN reads as {@link #FLOOR}, as OpenAI writes one.
 *
 * @param token       the drawn token
 * @param logprob     its log-probability
 * @param topIds      the most likely tokens, most likely first (ties: lower id first)
 * @param topLogprobs their log-probabilities
 * @param rank        the token's rank in the distribution, 1 + how many tokens are more likely (vLLM's
 *                    {@code rank}); 0 where not counted (a drawn token's)
 */
public record TokenLogprobs(int token, float logprob, int[] topIds, float[] topLogprobs, int rank) {
    /** What stands for a log-probability of -infinity (or NaN), which JSON cannot carry. */
    public static final float FLOOR = -9999f;
    /** The most top tokens one may ask for (OpenAI's limit). */
    public static final int MAX_TOP = 20;

    /**
     * The log-probability of {@code token} under one row of logits {@code row[0, vocab)} and the row's {@code top}
     * most likely tokens: a token given rather than drawn (a prompt's, scored).
     */
    public static TokenLogprobs of(float[] row, int vocab, int token, int top) {
        if (token < 0 || token >= vocab) {
            throw new IllegalArgumentException("token " + token + " is outside the vocabulary [0, " + vocab + ")");
        }
        TokenLogprobs scored = Distribution.of(row, vocab, top).of(token, row[token]);
        return new TokenLogprobs(token, scored.logprob, scored.topIds, scored.topLogprobs, rank(row, vocab, token));
    }

    /**
     * The log softmax of one row of logits {@code row[0, vocab)} at {@code token}, not floored: -infinity where the
     * token's logit is, NaN where the row holds a NaN.
     */
    public static double logSoftmaxAt(float[] row, int vocab, int token) {
        if (token < 0 || token >= vocab) {
            throw new IllegalArgumentException("token " + token + " is outside the vocabulary [0, " + vocab + ")");
        }
        return row[token] - Distribution.logSumExp(row, vocab);
    }

    /** 1 + the count of logits above the token's (NaN logits counted as not above). */
    private static int rank(float[] row, int vocab, int token) {
        float v = row[token];
        VectorSpecies<Float> f = FloatVector.SPECIES_PREFERRED;
        int bound = f.loopBound(vocab);
        int above = 0;
        int i = 0;
        for (; i < bound; i += f.length()) {
            above += FloatVector.fromArray(f, row, i).compare(VectorOperators.GT, v).trueCount();
        }
        for (; i < vocab; i++) {
            above += row[i] > v ? 1 : 0;
        }
        return above + 1;
    }

    /** These log-probabilities with at most {@code top} top tokens. */
    public TokenLogprobs withTop(int top) {
        if (top >= topIds.length) {
            return this;
        }
        return new TokenLogprobs(token, logprob, java.util.Arrays.copyOf(topIds, top),
                java.util.Arrays.copyOf(topLogprobs, top), rank);
    }

    /** The distribution of one row of logits: its log-partition and its {@code top} most likely tokens. */
    record Distribution(double logPartition, int[] topIds, float[] topLogprobs) {

        static Distribution of(float[] logits, int vocab, int top) {
            double lse = logSumExp(logits, vocab);
            int k = Math.min(top, vocab);
            int[] ids = new int[k];
            float[] values = new float[k];
            int n = 0;
            // Insertion into a short sorted list (k <= 20); a lane group none of whose logits beats the k-th best so
            // far is passed over whole, which most are once the list is full.
            VectorSpecies<Float> f = FloatVector.SPECIES_PREFERRED;
            int bound = k == 0 ? 0 : f.loopBound(vocab);
            int i = 0;
            for (; i < bound; i += f.length()) {
                float least = n < k ? Float.NEGATIVE_INFINITY : logits[ids[k - 1]];
                if (n == k && !FloatVector.fromArray(f, logits, i).compare(VectorOperators.GT, least).anyTrue()) {
                    continue;
                }
                for (int j = i; j < i + f.length(); j++) {
                    n = insert(logits, j, ids, n, k);
                }
            }
            for (i = Math.max(i, bound); k > 0 && i < vocab; i++) {
                n = insert(logits, i, ids, n, k);
            }
            for (int j = 0; j < n; j++) {
                values[j] = floor(logits[ids[j]] - lse);
            }
            return new Distribution(lse, java.util.Arrays.copyOf(ids, n), java.util.Arrays.copyOf(values, n));
        }

        /** Logit i into the list ids[0, n) of the most likely (at most k, best first, ties to the lower id); the new n. */
        private static int insert(float[] logits, int i, int[] ids, int n, int k) {
            float v = logits[i];
            int at;
            if (v != v) {
                return n; // NaN
            } else if (n < k) {
                at = n++;
            } else if (v > logits[ids[k - 1]]) {
                at = k - 1;
            } else {
                return n;
            }
            while (at > 0 && v > logits[ids[at - 1]]) {
                ids[at] = ids[at - 1];
                at--;
            }
            ids[at] = i;
            return n;
        }

        /**
         * log Σ e^l over the row, in vector lanes: a 200k vocabulary took ~2 ms a token with {@code Math.exp} a
         * logit (Zen 3), which a GPU's step (about 1 ms) would wait for. Each lane sums e^(l - max) in float (terms
         * at most 1, ~200k of them: relative error ~1e-6 at worst, far under what a reported logprob shows); a NaN
         * logit makes the sum NaN, which {@link #floor} reports as the floor.
         */
        private static double logSumExp(float[] logits, int vocab) {
            VectorSpecies<Float> f = FloatVector.SPECIES_PREFERRED;
            int bound = f.loopBound(vocab);
            FloatVector maxes = FloatVector.broadcast(f, Float.NEGATIVE_INFINITY);
            int i = 0;
            for (; i < bound; i += f.length()) {
                maxes = maxes.max(FloatVector.fromArray(f, logits, i));
            }
            float max = maxes.reduceLanes(VectorOperators.MAX);
            for (; i < vocab; i++) {
                max = Math.max(max, logits[i]);
            }
            if (max == Float.NEGATIVE_INFINITY || Float.isNaN(max)) {
                return max;
            }
            FloatVector sums = FloatVector.zero(f);
            for (i = 0; i < bound; i += f.length()) {
                sums = sums.add(VectorExp.exp(FloatVector.fromArray(f, logits, i).sub(max)));
            }
            double sum = sums.reduceLanes(VectorOperators.ADD);
            for (; i < vocab; i++) {
                sum += VectorExp.exp(logits[i] - max);
            }
            return max + Math.log(sum);
        }

        TokenLogprobs of(int token, float rawLogit) {
            return new TokenLogprobs(token, floor(rawLogit - logPartition), topIds, topLogprobs, 0);
        }
    }

    private static float floor(double v) {
        return v >= FLOOR ? (float) v : FLOOR;
    }
}
