package io.moe4j.cli;

import io.moe4j.generate.GenerationRequest;
import io.moe4j.generate.MoeModel;
import io.moe4j.generate.SamplingParams;
import io.moe4j.model.GenerationConfig;
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

    @Option(names = "--stop", description = "stop when this text appears (repeatable); it is not shown")
    List<String> stop = new ArrayList<>();

    GenerationRequest request(MoeModel model) {
        GenerationConfig g = model.generationConfig();
        boolean modelSamples = g.doSample();
        double t = temperature != null ? temperature
                : modelSamples && g.temperature() != null ? g.temperature() : modelSamples ? 1.0 : 0.0;
        int k = topK != null ? topK : modelSamples && g.topK() != null ? g.topK() : 0;
        double p = topP != null ? topP : modelSamples && g.topP() != null ? g.topP() : 1.0;
        double m = minP != null ? minP : modelSamples && g.minP() != null ? g.minP() : 0.0;
        long s = seed != null ? seed : System.nanoTime();
        return new GenerationRequest(maxTokens, new SamplingParams(t, k, p, m, s), stop, model.eosIds());
    }
}
