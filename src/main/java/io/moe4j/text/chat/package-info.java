/**
 * Chat formats: {@link io.moe4j.text.chat.ChatTemplate} renders a model's chat template for a
 * {@link io.moe4j.text.chat.ChatRequest} exactly as transformers does (the engine is in {@code jinja}); the
 * {@code output} package splits what the model generates back into answer, reasoning and tool calls (gpt-oss's
 * harmony messages, Qwen3's {@code <think>} block).
 */
package io.moe4j.text.chat;
