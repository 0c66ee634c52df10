package io.moe4j.generate;

/**
 * One finished generation: the text shown (stop strings and end tokens excluded), the tokens made, why it ended,
 * and the time of each phase.
 *
 * @param tokens       every generated token id, the end-of-sequence token included when one ended it
 * @param prefillNanos time to run the prompt and draw the first token
 * @param decodeNanos  time for every later token
 */
public record GenerationResult(int promptTokens, int[] tokens, String text, FinishReason finishReason,
                               long prefillNanos, long decodeNanos) {

    /** Prompt tokens a second in the prefill phase. */
    public double prefillTokensPerSecond() {
        return prefillNanos == 0 ? 0 : promptTokens * 1e9 / prefillNanos;
    }

    /** Generated tokens a second after the first one. */
    /** The decode rate as people read it: "n/a" where no token was decoded after the first (which the prompt gave). */
    public String decodeRateText() {
        return tokens.length < 2 || decodeNanos == 0 ? "n/a" : String.format(java.util.Locale.ROOT, "%.2f",
                decodeTokensPerSecond());
    }

    public double decodeTokensPerSecond() {
        int decoded = tokens.length - 1;
        return decoded <= 0 || decodeNanos == 0 ? 0 : decoded * 1e9 / decodeNanos;
    }
}
