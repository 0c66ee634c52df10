package io.moe4j.serve;

import io.moe4j.generate.SamplingParams;

import io.moe4j.generate.ReplyConstraint;
import java.util.List;

/**
 * One sequence to generate: the prompt's ids, how to sample, and when to stop (at most {@code maxTokens} new tokens,
 * an eos id, a stop string, or the model's context end, whichever comes first). A {@code constraint} (null when
 * the output is free) narrows each step's choice to the tokens it allows; it follows this one sequence, so a request
 * with one is submitted once. {@code logprobs}: how many top tokens each generated token's log-probabilities list
 * ({@link io.moe4j.generate.TokenLogprobs}), or -1 for none.
 */
public record GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops,
                                ReplyConstraint constraint, boolean skipSpecialTokens, int logprobs) {
    public GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops) {
        this(prompt, sampling, maxTokens, stops, null, false, -1);
    }

    public GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops,
                             ReplyConstraint constraint) {
        this(prompt, sampling, maxTokens, stops, constraint, false, -1);
    }

    public GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops,
                             ReplyConstraint constraint, boolean skipSpecialTokens) {
        this(prompt, sampling, maxTokens, stops, constraint, skipSpecialTokens, -1);
    }

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
