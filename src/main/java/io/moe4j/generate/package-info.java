/**
 * Text generation over a loaded model: {@link io.moe4j.generate.MoeModel} (the entry point), sampling
 * ({@link io.moe4j.generate.Sampler}, with allowed-token masks), one sequence ({@link io.moe4j.generate.Generator}),
 * multi-turn chat ({@link io.moe4j.generate.Conversation}), and chat turns for agents:
 * {@link io.moe4j.generate.MoeModel#chat} takes a {@link io.moe4j.generate.ChatGeneration} (messages, tools, tool
 * choice, response format) and returns a {@link io.moe4j.generate.ChatReply} (answer, reasoning, tool calls).
 *
 * <pre>{@code
 * ResponseFormat format = ResponseFormat.parse(responseFormatJson, model.chatOutputs().trie());
 * ChatReply reply = model.chat(new ChatGeneration(messages, tools, new ToolChoice.Auto(), format, Map.of(),
 *         model.defaultRequest(256)), event -> { }, () -> false);
 * }</pre>
 *
 * <p>{@link io.moe4j.generate.ChatOutputs} (one per model) knows the reply format and tool-call markup of the model's
 * family and holds the vocabulary trie; {@link io.moe4j.generate.ReplyConstraint} keeps one reply's answer to a JSON
 * grammar after free reasoning; {@link io.moe4j.generate.ReplyReader} reads a reply apart as it is generated.
 */
package io.moe4j.generate;
