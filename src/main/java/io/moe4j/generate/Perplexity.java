package io.moe4j.generate;

import io.moe4j.model.Model;
import io.moe4j.model.Session;

import java.util.Arrays;
import java.util.function.IntConsumer;

/**
 * How well a model predicts a token sequence: the mean negative log-likelihood of each token given those before it,
 * and its exponential, the perplexity. A sequence longer than one window is read in windows of {@code window} tokens
 * that start every {@code stride} tokens (the strided evaluation of transformers' perplexity guide): each window
 * scores only the tokens the windows before it did not, with the rest of the window before them as context, so a
 * stride under the window gives every scored token at least {@code window - stride} tokens of context. The first
 * token has nothing before it and is never scored.
 *
 * <p>A window's context is fed for its KV cache only; its scored tokens are fed in passes whose every position's
 * logits fit in {@value #LOGITS_PER_PASS} floats, so memory stays bounded whatever the window and the vocabulary.
 */
public final class Perplexity {
    /** The most logits one pass returns (64 MB). */
    static final int LOGITS_PER_PASS = 1 << 24;

    private Perplexity() {
    }

    /**
     * What a sequence scored.
     *
     * @param tokens  the sequence's tokens
     * @param scored  tokens scored (all but the first)
     * @param nll     the sum of their negative log-likelihoods, in nats
     * @param windows windows read
     */
    public record Result(int tokens, int scored, double nll, int windows) {
        /** The mean negative log-likelihood a token, in nats. */
        public double meanNll() {
            return nll / scored;
        }

        public double perplexity() {
            return Math.exp(meanNll());
        }
    }

    /**
     * Scores {@code ids} with windows of {@code window} tokens every {@code stride}; {@code windowsDone} hears each
     * window as it ends.
     */
    public static Result score(Model model, int[] ids, int window, int stride, IntConsumer windowsDone) {
        return score(model, ids, window, stride, Math.max(1, LOGITS_PER_PASS / model.vocabSize()), windowsDone);
    }

    /** {@link #score(Model, int[], int, int, IntConsumer)} with passes of at most {@code passRows} positions. */
    static Result score(Model model, int[] ids, int window, int stride, int passRows, IntConsumer windowsDone) {
        if (ids.length < 2) {
            throw new IllegalArgumentException("a sequence to score needs at least 2 tokens (the first is never "
                    + "scored), got " + ids.length);
        }
        if (window < 2) {
            throw new IllegalArgumentException("the window must hold at least 2 tokens, got " + window);
        }
        if (stride < 1 || stride > window) {
            throw new IllegalArgumentException("the stride must be in [1, window " + window + "], got " + stride);
        }
        if (window > model.contextLimit()) {
            throw new IllegalArgumentException("the window of " + window + " tokens is more than the model's context "
                    + "of " + model.contextLimit());
        }
        int vocab = model.vocabSize();
        int pass = passRows;
        double nll = 0;
        int scored = 0;
        int windows = 0;
        int scoredTo = 1; // tokens [1, scoredTo) are scored
        try (Session session = model.newSession()) {
            for (int begin = 0; scoredTo < ids.length; begin += stride) {
                int end = Math.min(begin + window, ids.length);
                // token i is scored from the logits after token i - 1: feed up to the first one's predecessor for
                // its cache alone, then the rest with every position's logits
                int from = Math.max(scoredTo, begin + 1);
                session.reset();
                if (from - 1 > begin) {
                    session.forward(Arrays.copyOfRange(ids, begin, from - 1), false);
                }
                for (int at = from - 1; at < end - 1; at += pass) {
                    int to = Math.min(at + pass, end - 1);
                    float[] logits = session.forward(Arrays.copyOfRange(ids, at, to), true);
                    for (int r = 0; r < to - at; r++) {
                        float[] row = Arrays.copyOfRange(logits, r * vocab, (r + 1) * vocab);
                        nll -= TokenLogprobs.logSoftmaxAt(row, vocab, ids[at + r + 1]);
                        scored++;
                    }
                }
                scoredTo = end;
                windows++;
                windowsDone.accept(windows);
            }
        }
        return new Result(ids.length, scored, nll, windows);
    }

    /** How many windows {@link #score} reads for {@code tokens} tokens (for a progress bar). */
    public static int windows(int tokens, int window, int stride) {
        int n = 0;
        for (int begin = 0, scoredTo = 1; scoredTo < tokens; begin += stride) {
            scoredTo = Math.min(begin + window, tokens);
            n++;
        }
        return n;
    }
}
