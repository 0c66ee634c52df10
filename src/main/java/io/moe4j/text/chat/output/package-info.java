/**
 * Streaming parsers of a model's reply: {@link io.moe4j.text.chat.output.HarmonyParser} (gpt-oss channels and
 * tool calls), {@link io.moe4j.text.chat.output.ThinkSplitter} (Qwen3's reasoning block), and
 * {@link io.moe4j.text.chat.output.ReplySplitter}, which picks one from the rendered prompt. Each takes text in
 * pieces of any size and never loses or reorders text.
 */
package io.moe4j.text.chat.output;
