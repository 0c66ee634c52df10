package io.moe4j.generate;

import io.moe4j.MoeException;

import java.util.List;
import java.util.Set;

/**
 * What to generate after a prompt: at most {@code maxTokens} new tokens drawn by {@code sampling}, ending early at
 * any of {@code eosIds} (not shown) or at any of the {@code stop} strings (not shown either).
 */
public record GenerationRequest(int maxTokens, SamplingParams sampling, List<String> stop, Set<Integer> eosIds) {

    public GenerationRequest {
        if (maxTokens < 1) {
            throw new MoeException("max tokens must be at least 1, got " + maxTokens);
        }
        stop = List.copyOf(stop);
        eosIds = Set.copyOf(eosIds);
    }
}
