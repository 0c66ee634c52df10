package io.moe4j.generate;

import io.moe4j.MoeException;

import java.util.Arrays;

/**
 * What a reply keeps and when it may end, beyond its sampling (vLLM's request fields of the same names).
 *
 * @param logprobs     how many top tokens each drawn token's {@link TokenLogprobs} lists; -1 keeps none
 * @param minTokens    the fewest tokens before an end-of-sequence or stop token may be drawn, or a stop string end
 *                     the reply
 * @param ignoreEos    end-of-sequence ids do not end the reply (they are text like any other token)
 * @param stopTokenIds ids that end the reply as an end-of-sequence id does (not shown)
 */
public record ReplyOptions(int logprobs, int minTokens, boolean ignoreEos, int[] stopTokenIds) {
    public static final ReplyOptions NONE = new ReplyOptions(-1, 0, false, new int[0]);

    public ReplyOptions {
        if (logprobs < -1 || logprobs > TokenLogprobs.MAX_TOP) {
            throw new MoeException("top logprobs must be in [0, " + TokenLogprobs.MAX_TOP + "] (or -1: none), got "
                    + logprobs);
        }
        if (minTokens < 0) {
            throw new MoeException("min tokens must be >= 0, got " + minTokens);
        }
        stopTokenIds = Arrays.stream(stopTokenIds).sorted().distinct().toArray();
    }

    boolean isStopToken(int id) {
        return Arrays.binarySearch(stopTokenIds, id) >= 0;
    }
}
