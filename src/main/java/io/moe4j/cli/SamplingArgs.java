package io.moe4j.cli;

import io.moe4j.generate.GenerationRequest;
import io.moe4j.generate.LogitAdjustments;
import io.moe4j.generate.MoeModel;
import io.moe4j.generate.SamplingParams;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.List;

/**
 * Sampling options; a value not given on the command line comes from the model's generation_config.json, and
 * where that is silent too, generation is greedy.
 */
final class SamplingArgs {
    @Option(names = "--max-tokens", defaultValue = "256", description = "most tokens to generate (default: ${DEFAULT-VALUE})")
    int maxTokens;

    @Option(names = "--temperature", description = "0 for greedy (default: the model's generation_config, else 0)")
    Double temperature;

    @Option(names = "--top-k", description = "keep the k most likely tokens (0: all)")
    Integer topK;

    @Option(names = "--top-p", description = "nucleus sampling mass in (0, 1]")
    Double topP;

    @Option(names = "--min-p", description = "drop tokens below min-p × the top probability")
    Double minP;

    @Option(names = "--seed", description = "seed of the sampler (default: random)")
    Long seed;

    @Option(names = "--presence-penalty", description = "subtracted from every token the reply holds, in [-2, 2] "
            + "(default: 0)")
    Double presencePenalty;

    @Option(names = "--frequency-penalty", description = "subtracted per occurrence in the reply, in [-2, 2] "
            + "(default: 0)")
    Double frequencyPenalty;

    @Option(names = "--repetition-penalty", description = "divides the positive logits (multiplies the negative) of "
            + "tokens in the prompt or the reply; 1 is none (default: the model's generation_config, else 1)")
    Double repetitionPenalty;

    @Option(names = "--stop", description = "stop when this text appears (repeatable); it is not shown")
    List<String> stop = new ArrayList<>();

    /** Fails naming the flag when one is out of range: before a model is loaded, which can take minutes. */
    void check() {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("--max-tokens must be at least 1, got " + maxTokens);
        }
        if (temperature != null && !(temperature >= 0 && temperature < Double.POSITIVE_INFINITY)) {
            throw new IllegalArgumentException("--temperature must be 0 (greedy) or more, got " + temperature);
        }
        if (topK != null && topK < 0) {
            throw new IllegalArgumentException("--top-k must be 0 (all) or more, got " + topK);
        }
        if (topP != null && !(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("--top-p must be in (0, 1], got " + topP);
        }
        if (minP != null && !(minP >= 0 && minP <= 1)) {
            throw new IllegalArgumentException("--min-p must be in [0, 1], got " + minP);
        }
        if (presencePenalty != null && !(presencePenalty >= -2 && presencePenalty <= 2)) {
            throw new IllegalArgumentException("--presence-penalty must be in [-2, 2], got " + presencePenalty);
        }
        if (frequencyPenalty != null && !(frequencyPenalty >= -2 && frequencyPenalty <= 2)) {
            throw new IllegalArgumentException("--frequency-penalty must be in [-2, 2], got " + frequencyPenalty);
        }
        if (repetitionPenalty != null && !(repetitionPenalty > 0 && repetitionPenalty < Double.POSITIVE_INFINITY)) {
            throw new IllegalArgumentException("--repetition-penalty must be a number > 0, got " + repetitionPenalty);
        }
        if (stop.stream().anyMatch(String::isEmpty)) {
            throw new IllegalArgumentException("--stop must be a non-empty text (an empty one would stop at once)");
        }
    }

    /** The model's own request (its generation_config sampling, its eos ids) with what the command line sets. */
    GenerationRequest request(MoeModel model) {
        SamplingParams d = model.defaultRequest(maxTokens).sampling();
        SamplingParams p = new SamplingParams(temperature != null ? temperature : d.temperature(),
                topK != null ? topK : d.topK(), topP != null ? topP : d.topP(), minP != null ? minP : d.minP(),
                seed != null ? seed : System.nanoTime());
        LogitAdjustments a = d.adjustments();
        p = p.withAdjustments(new LogitAdjustments(presencePenalty != null ? presencePenalty : a.presencePenalty(),
                frequencyPenalty != null ? frequencyPenalty : a.frequencyPenalty(),
                repetitionPenalty != null ? repetitionPenalty : a.repetitionPenalty(), a.bias()));
        return new GenerationRequest(maxTokens, p, stop, model.eosIds());
    }
}
