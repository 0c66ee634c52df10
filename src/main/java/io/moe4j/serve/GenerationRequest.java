package io.moe4j.serve;

import io.moe4j.generate.SamplingParams;

import java.util.List;

/**
 * One sequence to generate: the prompt's ids, how to sample, and when to stop (at most {@code maxTokens} new tokens,
 * an eos id, a stop string, or the model's context end, whichever comes first).
 */
public record GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops) {
    public GenerationRequest {
        if (prompt.length == 0) {
            throw new IllegalArgumentException("the prompt is empty");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("max tokens must be >= 1, got " + maxTokens);
        }
        stops = List.copyOf(stops);
    }
}
