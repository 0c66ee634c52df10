package io.moe4j.generate;

import io.moe4j.MoeException;

/**
 * How the next token is drawn from the logits. {@code temperature == 0} is greedy (argmax, ties to the lowest id);
 * otherwise the logits are divided by the temperature, cut by top-k, top-p and min-p in that order (as transformers'
 * warpers run), and a token is drawn from what remains with a generator seeded by {@code seed}.
 *
 * @param topK  keep the k most likely tokens; 0 keeps all
 * @param topP  keep the smallest set of most likely tokens whose probability reaches p; 1 keeps all
 * @param minP  drop tokens whose probability is below minP × the top probability; 0 keeps all
 * @param seed  the generator's seed, so that a run can be repeated
 * @param adjustments penalties and biases applied to the logits before all of the above ({@link LogitAdjustments})
 */
public record SamplingParams(double temperature, int topK, double topP, double minP, long seed,
                             LogitAdjustments adjustments) {

    public SamplingParams(double temperature, int topK, double topP, double minP, long seed) {
        this(temperature, topK, topP, minP, seed, LogitAdjustments.NONE);
    }

    public SamplingParams {
        java.util.Objects.requireNonNull(adjustments, "adjustments");
        if (!(temperature >= 0) || Double.isInfinite(temperature)) {
            throw new MoeException("temperature must be a finite number >= 0, got " + temperature);
        }
        if (topK < 0) {
            throw new MoeException("top-k must be >= 0, got " + topK);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new MoeException("top-p must be in (0, 1], got " + topP);
        }
        if (!(minP >= 0 && minP <= 1)) {
            throw new MoeException("min-p must be in [0, 1], got " + minP);
        }
    }

    public static SamplingParams greedy() {
        return new SamplingParams(0, 0, 1, 0, 0);
    }

    public SamplingParams withSeed(long s) {
        return new SamplingParams(temperature, topK, topP, minP, s, adjustments);
    }

    public SamplingParams withAdjustments(LogitAdjustments a) {
        return new SamplingParams(temperature, topK, topP, minP, seed, a);
    }

    public boolean isGreedy() {
        return temperature == 0;
    }
}
