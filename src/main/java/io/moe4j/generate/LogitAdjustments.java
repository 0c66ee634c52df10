package io.moe4j.generate;

import io.moe4j.MoeException;

import java.util.Map;

/**
 * Changes to the logits before a token is drawn, as OpenAI's API and vLLM define them: a bias added to listed token
 * ids ({@code logit_bias}), then the repetition penalty over the tokens of the prompt and the reply so far (a positive
 * logit divided by it, a negative one multiplied), then the frequency penalty times each token's count in the reply
 * and the presence penalty for each token the reply holds, subtracted. The neutral values ({@link #NONE}) change
 * nothing; a sequence with any other draws on the host, where its logits are ({@link Adjuster}).
 *
 * @param presencePenalty   subtracted once from every token the reply holds; in [-2, 2]
 * @param frequencyPenalty  subtracted per occurrence in the reply; in [-2, 2]
 * @param repetitionPenalty applied to the tokens of the prompt and the reply; > 0, 1 changes nothing
 * @param bias              token id to the value added to its logit, in [-100, 100]
 */
public record LogitAdjustments(double presencePenalty, double frequencyPenalty, double repetitionPenalty,
                               Map<Integer, Float> bias) {
    public static final LogitAdjustments NONE = new LogitAdjustments(0, 0, 1, Map.of());

    public LogitAdjustments {
        if (!(presencePenalty >= -2 && presencePenalty <= 2)) {
            throw new MoeException("presence penalty must be in [-2, 2], got " + presencePenalty);
        }
        if (!(frequencyPenalty >= -2 && frequencyPenalty <= 2)) {
            throw new MoeException("frequency penalty must be in [-2, 2], got " + frequencyPenalty);
        }
        if (!(repetitionPenalty > 0) || Double.isInfinite(repetitionPenalty)) {
            throw new MoeException("repetition penalty must be a finite number > 0, got " + repetitionPenalty);
        }
        bias = Map.copyOf(bias);
        for (Map.Entry<Integer, Float> e : bias.entrySet()) {
            if (e.getKey() < 0 || !(e.getValue() >= -100 && e.getValue() <= 100)) {
                throw new MoeException("logit bias of token " + e.getKey() + " must be in [-100, 100] for an id "
                        + ">= 0, got " + e.getValue());
            }
        }
    }

    public boolean isNone() {
        return presencePenalty == 0 && frequencyPenalty == 0 && repetitionPenalty == 1 && bias.isEmpty();
    }

    /** The same with the repetition penalty {@code r}. */
    public LogitAdjustments withRepetitionPenalty(double r) {
        return new LogitAdjustments(presencePenalty, frequencyPenalty, r, bias);
    }

    /** One sequence's adjustments: the prompt's tokens and the reply's counts, which each drawn token joins. */
    public static final class Adjuster {
        private final LogitAdjustments a;
        /** Per token id: its count in the reply so far. */
        private int[] replyCounts = new int[0];
        /** Per token id: whether the prompt holds it (for the repetition penalty). */
        private boolean[] inPrompt = new boolean[0];

        public Adjuster(LogitAdjustments adjustments, int[] prompt) {
            this.a = adjustments;
            if (adjustments.repetitionPenalty() != 1) {
                for (int id : prompt) {
                    if (id >= inPrompt.length) {
                        inPrompt = java.util.Arrays.copyOf(inPrompt, Math.max(id + 1, 2 * inPrompt.length));
                    }
                    inPrompt[id] = true;
                }
            }
        }

        /** Adjusts logits[0, vocab) in place. */
        public void apply(float[] logits, int vocab) {
            for (Map.Entry<Integer, Float> e : a.bias().entrySet()) {
                if (e.getKey() < vocab) {
                    logits[e.getKey()] += e.getValue();
                }
            }
            float r = (float) a.repetitionPenalty();
            int seen = Math.min(vocab, Math.max(replyCounts.length, inPrompt.length));
            for (int id = 0; id < seen; id++) {
                int count = id < replyCounts.length ? replyCounts[id] : 0;
                boolean repeated = count > 0 || (id < inPrompt.length && inPrompt[id]);
                if (repeated && r != 1) {
                    logits[id] = logits[id] > 0 ? logits[id] / r : logits[id] * r;
                }
                if (count > 0) {
                    logits[id] -= (float) (a.frequencyPenalty() * count + a.presencePenalty());
                }
            }
        }

        /** A token the reply now holds. */
        public void accept(int token) {
            if (token >= replyCounts.length) {
                replyCounts = java.util.Arrays.copyOf(replyCounts, Math.max(token + 1, 2 * replyCounts.length));
            }
            replyCounts[token]++;
        }
    }
}
