package io.moe4j.serve;

import io.moe4j.model.GenerationConfig;

/**
 * The sampling a request gets for the fields it leaves out: the checkpoint authors' values from
 * generation_config.json where it gives them (temperature, top_p, top_k, min_p, repetition_penalty; as vLLM serves
 * them by default), else OpenAI's (temperature 1, no top-p, top-k or min-p cut, no repetition penalty).
 *
 * @param topK 0 for no top-k cut
 */
public record SamplingDefaults(double temperature, double topP, int topK, double minP, double repetitionPenalty) {
    public static final SamplingDefaults OPENAI = new SamplingDefaults(1.0, 1.0, 0, 0.0, 1.0);

    public SamplingDefaults {
        if (!(temperature >= 0 && temperature <= 2) || !(topP > 0 && topP <= 1) || topK < 0
                || !(minP >= 0 && minP <= 1) || !(repetitionPenalty > 0) || Double.isInfinite(repetitionPenalty)) {
            throw new IllegalArgumentException("sampling defaults out of range: " + temperature + ", " + topP + ", "
                    + topK + ", " + minP + ", " + repetitionPenalty);
        }
    }

    public SamplingDefaults(double temperature, double topP, int topK, double minP) {
        this(temperature, topP, topK, minP, 1.0);
    }

    /** generation_config.json's values where given (a top_k of 0 or less is none), OpenAI's elsewhere. */
    public static SamplingDefaults of(GenerationConfig g) {
        try {
            return fromConfig(g);
        } catch (IllegalArgumentException e) {
            throw new io.moe4j.MoeException("generation_config.json: " + e.getMessage());
        }
    }

    private static SamplingDefaults fromConfig(GenerationConfig g) {
        return new SamplingDefaults(g.temperature() != null ? g.temperature() : OPENAI.temperature,
                g.topP() != null ? g.topP() : OPENAI.topP, g.topK() != null ? Math.max(0, g.topK()) : OPENAI.topK,
                g.minP() != null ? g.minP() : OPENAI.minP,
                g.repetitionPenalty() != null ? g.repetitionPenalty() : OPENAI.repetitionPenalty);
    }
}
