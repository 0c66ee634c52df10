package io.moe4j.serve;

import io.moe4j.generate.FinishReason;

/**
 * How a sequence ended.
 *
 * @param promptTokens     tokens of the prompt
 * @param completionTokens tokens sampled (an eos id included)
 * @param error            what failed when the reason is {@link FinishReason#ERROR}; null otherwise
 * @param cachedTokens     prompt tokens a kept sequence already held ({@link PrefixCache}), not fed again
 */
public record GenerationResult(FinishReason reason, int promptTokens, int completionTokens, String error,
                               int cachedTokens) {
    public GenerationResult(FinishReason reason, int promptTokens, int completionTokens, String error) {
        this(reason, promptTokens, completionTokens, error, 0);
    }
}
