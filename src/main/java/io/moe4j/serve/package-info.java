/**
 * {@code moe serve}: an OpenAI-compatible HTTP server with continuous batching.
 *
 * <p>The pieces, in the order a request meets them:
 * <ul>
 *   <li>{@link io.moe4j.serve.OpenAiServer}: the HTTP routes on Javalin; reads and bounds the body, refuses with
 *       OpenAI error objects ({@link io.moe4j.serve.ApiError}), answers whole or as server-sent events.</li>
 *   <li>{@link io.moe4j.serve.RequestParser}: checks every field and builds an {@link io.moe4j.serve.ApiRequest}; a
 *       Responses API request is first read as the chat request it amounts to
 *       ({@link io.moe4j.serve.ResponsesRequest}).</li>
 *   <li>{@link io.moe4j.serve.TextCodec}: renders the chat (or encodes the prompt) to ids, and turns generated ids
 *       back into text with an incremental detokenizer.</li>
 *   <li>{@link io.moe4j.serve.Scheduler}: one engine thread that steps every active sequence together through
 *       {@link io.moe4j.serve.StepModel#step}, admits waiting requests between steps, samples each sequence with its
 *       own seeded sampler and ends it at eos, a stop string, max tokens or the context end. A request that scores its
 *       prompt (echo with logprobs, {@code prompt_logprobs}) has its prompt fed alone through
 *       {@link io.moe4j.serve.StepModel#stepEveryRow}, every position's logits read, before it joins the batch.</li>
 *   <li>{@link io.moe4j.serve.ReplyDelivery} (chat and completions, {@code n} choices) and
 *       {@link io.moe4j.serve.ResponsesDelivery} (the Responses API's items and events): a request's answer, whole
 *       or streamed, from its sequences' events.</li>
 *   <li>{@link io.moe4j.serve.ServeMetrics}: counters and histograms for {@code GET /metrics}.</li>
 * </ul>
 *
 * <p>Agents' requests: {@code tools} and {@code tool_choice} render through the chat template; a reply is read apart
 * by {@link io.moe4j.generate.ReplyReader} into {@code content}, {@code reasoning_content} (gpt-oss's analysis
 * channel, Qwen3's {@code <think>}) and {@code tool_calls} (harmony {@code to=functions.NAME}, Qwen3
 * {@code <tool_call>}, DeepSeek-V3's tool-call tokens; the family from config.json's {@code model_type}), whole or as
 * {@code delta.reasoning_content} / {@code delta.tool_calls} chunks. {@code response_format} json_object /
 * json_schema and {@code tool_choice} required / named are kept by a per-sequence
 * {@link io.moe4j.generate.ReplyConstraint} that the scheduler asks for each step's allowed tokens; its JSON starts
 * after the family's reasoning, and stop strings do not apply to it. Both come from the model's
 * {@link io.moe4j.generate.ChatOutputs} ({@link io.moe4j.serve.TextCodec#chatOutputs()}), which holds the vocabulary's
 * byte trie, built on first use and shared.
 *
 * <p>A real model joins by implementing {@link io.moe4j.serve.StepModel} (sequences with their KV caches, one batched
 * forward per step) and {@link io.moe4j.serve.TextCodec} (tokenizer and chat template), then
 * {@code new OpenAiServer(new ServedModel(id, model, text), schedulerConfig, serverConfig).start()}. The
 * {@link io.moe4j.serve.toy} package holds a deterministic byte-level model of both for tests.
 */
package io.moe4j.serve;
