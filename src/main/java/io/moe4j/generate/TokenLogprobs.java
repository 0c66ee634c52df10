package io.moe4j.generate;

/**
 * The log-probability of a drawn token and of the most likely ones, under the model's own distribution: the log
 * softmax of the raw logits, before penalties, biases, temperature, cuts and constraints (vLLM's default,
 * {@code raw_logprobs}). A value the logits make -infinity or NaN reads as {@link #FLOOR}, as OpenAI writes one.
 *
 * @param token       the drawn token
 * @param logprob     its log-probability
 * @param topIds      the most likely tokens, most likely first (ties: lower id first)
 * @param topLogprobs their log-probabilities
 */
public record TokenLogprobs(int token, float logprob, int[] topIds, float[] topLogprobs) {
    /** What stands for a log-probability of -infinity (or NaN), which JSON cannot carry. */
    public static final float FLOOR = -9999f;
    /** The most top tokens one may ask for (OpenAI's limit). */
    public static final int MAX_TOP = 20;

    /** The distribution of one row of logits: its log-partition and its {@code top} most likely tokens. */
    record Distribution(double logPartition, int[] topIds, float[] topLogprobs) {

        static Distribution of(float[] logits, int vocab, int top) {
            double max = Double.NEGATIVE_INFINITY;
            for (int i = 0; i < vocab; i++) {
                if (logits[i] > max) {
                    max = logits[i];
                }
            }
            double sum = 0;
            for (int i = 0; i < vocab; i++) {
                sum += Math.exp(logits[i] - max);
            }
            double lse = max + Math.log(sum);
            int k = Math.min(top, vocab);
            int[] ids = new int[k];
            float[] values = new float[k];
            int n = 0;
            // insertion into a short sorted list: k <= 20, and most tokens fail the first comparison
            for (int i = 0; i < vocab; i++) {
                float v = logits[i];
                if (v != v) {
                    continue; // NaN
                }
                int at;
                if (n < k) {
                    at = n++;
                } else if (k > 0 && v > logits[ids[k - 1]]) {
                    at = k - 1;
                } else {
                    continue;
                }
                while (at > 0 && v > logits[ids[at - 1]]) {
                    ids[at] = ids[at - 1];
                    at--;
                }
                ids[at] = i;
            }
            for (int j = 0; j < n; j++) {
                values[j] = floor(logits[ids[j]] - lse);
            }
            return new Distribution(lse, java.util.Arrays.copyOf(ids, n), java.util.Arrays.copyOf(values, n));
        }

        TokenLogprobs of(int token, float rawLogit) {
            return new TokenLogprobs(token, floor(rawLogit - logPartition), topIds, topLogprobs);
        }
    }

    private static float floor(double v) {
        return v >= FLOOR ? (float) v : FLOOR;
    }
}
