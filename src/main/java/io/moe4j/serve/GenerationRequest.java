package io.moe4j.serve;

import io.moe4j.generate.SamplingParams;

import io.moe4j.generate.ReplyConstraint;
import io.moe4j.generate.ReplyOptions;
import java.util.List;

/**
 * One sequence to generate: the prompt's ids, how to sample, and when to stop (at most {@code maxTokens} new tokens,
 * an eos id, a stop string, or the model's context end, whichever comes first). A {@code constraint} (null when
 * the output is free) narrows each step's choice to the tokens it allows; it follows this one sequence, so a request
 * with one is submitted once. {@code options}: what the reply keeps (log-probabilities) and when it may end beyond
 * that ({@link ReplyOptions}). {@code promptLogprobs} >= 0 scores the prompt: the listener hears each prompt token's
 * log-probability given those before it, with that many top tokens ({@link GenerationListener#onPromptLogprobs}),
 * before any reply; -1 scores nothing. {@code maxTokens} 0 asks for no reply (the prompt scored, or only counted).
 */
public record GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops,
                                ReplyConstraint constraint, boolean skipSpecialTokens, ReplyOptions options,
                                int promptLogprobs) {
    public GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops,
                             ReplyConstraint constraint, boolean skipSpecialTokens, ReplyOptions options) {
        this(prompt, sampling, maxTokens, stops, constraint, skipSpecialTokens, options, -1);
    }

    public GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops) {
        this(prompt, sampling, maxTokens, stops, null, false, ReplyOptions.NONE);
    }

    public GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops,
                             ReplyConstraint constraint) {
        this(prompt, sampling, maxTokens, stops, constraint, false, ReplyOptions.NONE);
    }

    public GenerationRequest(int[] prompt, SamplingParams sampling, int maxTokens, List<String> stops,
                             ReplyConstraint constraint, boolean skipSpecialTokens) {
        this(prompt, sampling, maxTokens, stops, constraint, skipSpecialTokens, ReplyOptions.NONE);
    }

    public GenerationRequest {
        if (prompt.length == 0) {
            throw new IllegalArgumentException("the prompt is empty");
        }
        if (maxTokens < 0) {
            throw new IllegalArgumentException("max tokens must be >= 0, got " + maxTokens);
        }
        if (promptLogprobs < -1 || promptLogprobs > io.moe4j.generate.TokenLogprobs.MAX_TOP) {
            throw new IllegalArgumentException("prompt logprobs must be in [0, " + io.moe4j.generate.TokenLogprobs.MAX_TOP
                    + "] (or -1: none), got " + promptLogprobs);
        }
        stops = List.copyOf(stops);
    }
}
