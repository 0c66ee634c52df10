package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.generate.SamplingParams;
import io.moe4j.text.tools.ToolChoice;

import java.util.List;

/**
 * A validated {@code /v1/chat/completions} or {@code /v1/completions} request.
 *
 * @param chat           the conversation (chat requests); null for completions
 * @param prompts        completions: the prompts, each answered by {@code n} choices of its own (a list of one
 *                       where one prompt was sent); empty for chat
 * @param maxTokens      the cap on new tokens, or null for "until the context is full"
 * @param includeUsage   {@code stream_options.include_usage}: a last streamed chunk with the usage
 * @param responseFormat the {@code response_format} object as sent (checked), or null
 * @param toolChoice     the {@code tool_choice} read against the tools (none without tools); null for completions
 * @param grammar        what constrained decoding keeps the reply to (a forced call's, a JSON response_format's, or
 *                       vLLM's guided decoding's), compiled once as the request was read; null for free text
 * @param grammarField   the request field that asked for the grammar (named by errors about it); null without one
 * @param replyOptions   what each reply keeps (log-probabilities) and when it may end (min tokens, ignore eos, stop
 *                       token ids)
 * @param n              how many choices (sequences) to generate for each prompt
 * @param echo           completions: the prompt is written before each reply
 * @param promptLogprobs vLLM's {@code prompt_logprobs}: each prompt token's log-probability with that many top
 *                       tokens, in whole responses; -1 for none
 */
public record ApiRequest(boolean isChat, String model, ChatPrompt chat, List<CompletionPrompt> prompts,
                         SamplingParams sampling, Integer maxTokens, List<String> stops, boolean stream,
                         boolean includeUsage, JsonNode responseFormat, ToolChoice toolChoice,
                         boolean skipSpecialTokens, boolean parallelToolCalls,
                         io.moe4j.generate.constraint.AnswerGrammar grammar, String grammarField,
                         io.moe4j.generate.ReplyOptions replyOptions, int n, boolean echo,
                         int promptLogprobs) {
    public ApiRequest {
        prompts = List.copyOf(prompts);
    }
}
