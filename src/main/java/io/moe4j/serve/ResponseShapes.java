package io.moe4j.serve;

import io.moe4j.generate.FinishReason;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.text.tools.ToolCall;

import java.util.List;

/**
 * The JSON bodies of one response in OpenAI's shapes: {@code chat.completion} and {@code chat.completion.chunk} for
 * chat, {@code text_completion} (whole and chunked) for completions. Fields the SDKs require but a reply does not
 * fill ({@code logprobs} when not asked for, {@code refusal}) are sent as null.
 */
record ResponseShapes(ObjectMapper json, boolean chat, String id, long created, String model) {

    /** @param logprobs the reply's log-probabilities ({@link LogprobsWriter}), or null when not asked for */
    ObjectNode whole(String text, GenerationResult end, JsonNode logprobs) {
        ObjectNode root = head(chat ? "chat.completion" : "text_completion");
        ObjectNode choice = root.putArray("choices").addObject();
        choice.put("index", 0);
        if (chat) {
            ObjectNode message = choice.putObject("message");
            message.put("role", "assistant");
            message.put("content", text);
            message.putNull("refusal");
        } else {
            choice.put("text", text);
        }
        choice.set("logprobs", logprobs);
        choice.put("finish_reason", end.reason().apiName());
        root.set("usage", usage(end));
        return root;
    }

    /**
     * A whole chat reply read apart: the answer as {@code content} (null when the reply only calls tools), the
     * reasoning as {@code reasoning_content} (as vLLM names it; absent when none), the calls as {@code tool_calls}
     * with {@code finish_reason: "tool_calls"}.
     */
    ObjectNode wholeReply(String answer, String reasoning, List<ToolCall> calls, GenerationResult end,
                          JsonNode logprobs) {
        ObjectNode root = head("chat.completion");
        ObjectNode choice = root.putArray("choices").addObject();
        choice.put("index", 0);
        ObjectNode message = choice.putObject("message");
        message.put("role", "assistant");
        if (answer.isEmpty() && !calls.isEmpty()) {
            message.putNull("content");
        } else {
            message.put("content", answer);
        }
        if (!reasoning.isEmpty()) {
            message.put("reasoning_content", reasoning);
        }
        message.putNull("refusal");
        if (!calls.isEmpty()) {
            ArrayNode list = message.putArray("tool_calls");
            for (ToolCall c : calls) {
                ObjectNode call = list.addObject().put("id", c.id()).put("type", "function");
                call.putObject("function").put("name", c.name()).put("arguments", c.arguments());
            }
        }
        choice.set("logprobs", logprobs);
        choice.put("finish_reason", finishReason(end, !calls.isEmpty()));
        root.set("usage", usage(end));
        return root;
    }

    private static String finishReason(GenerationResult end, boolean calls) {
        return calls && end.reason() == FinishReason.STOP ? "tool_calls" : end.reason().apiName();
    }

    ObjectNode reasoningChunk(String text, boolean includeUsage) {
        ObjectNode root = chunk(includeUsage);
        ((ObjectNode) root.get("choices").get(0)).putObject("delta").put("reasoning_content", text);
        return root;
    }

    /**
     * A call as OpenAI streams one: a first chunk with its index, id, type, name and empty arguments, then the
     * arguments; clients join the pieces by index.
     */
    List<ObjectNode> toolCallChunks(int index, ToolCall c, boolean includeUsage) {
        ObjectNode first = chunk(includeUsage);
        ObjectNode head = ((ObjectNode) first.get("choices").get(0)).putObject("delta").putArray("tool_calls")
                .addObject();
        head.put("index", index).put("id", c.id()).put("type", "function");
        head.putObject("function").put("name", c.name()).put("arguments", "");
        ObjectNode second = chunk(includeUsage);
        ObjectNode rest = ((ObjectNode) second.get("choices").get(0)).putObject("delta").putArray("tool_calls")
                .addObject();
        rest.put("index", index);
        rest.putObject("function").put("arguments", c.arguments());
        return List.of(first, second);
    }

    /** The chat stream's opening chunk: the assistant role with empty content, as OpenAI sends it. */
    ObjectNode firstChunk(boolean includeUsage) {
        ObjectNode root = chunk(includeUsage);
        ObjectNode delta = ((ObjectNode) root.get("choices").get(0)).putObject("delta");
        delta.put("role", "assistant");
        delta.put("content", "");
        return root;
    }

    ObjectNode textChunk(String text, boolean includeUsage) {
        ObjectNode root = chunk(includeUsage);
        ObjectNode choice = (ObjectNode) root.get("choices").get(0);
        if (chat) {
            choice.putObject("delta").put("content", text);
        } else {
            choice.put("text", text);
        }
        return root;
    }

    ObjectNode finishChunk(GenerationResult end, boolean includeUsage) {
        return finishChunk(end, includeUsage, false);
    }

    ObjectNode finishChunk(GenerationResult end, boolean includeUsage, boolean calls) {
        ObjectNode root = chunk(includeUsage);
        ObjectNode choice = (ObjectNode) root.get("choices").get(0);
        if (chat) {
            choice.putObject("delta");
        } else {
            choice.put("text", "");
        }
        choice.put("finish_reason", finishReason(end, calls));
        return root;
    }

    /** The chunk (or body) of choice {@code index} of a request that asked for several ({@code n}). */
    static ObjectNode indexed(ObjectNode chunk, int index) {
        ((ObjectNode) chunk.get("choices").get(0)).put("index", index);
        return chunk;
    }

    /** The whole bodies of a request's choices as one body: every choice in index order, the usage of them all. */
    ObjectNode joined(List<ObjectNode> bodies, GenerationResult total) {
        if (bodies.size() == 1) {
            return bodies.getFirst();
        }
        ObjectNode root = bodies.getFirst().deepCopy();
        ArrayNode list = root.putArray("choices");
        for (int i = 0; i < bodies.size(); i++) {
            list.add(((ObjectNode) bodies.get(i).get("choices").get(0)).put("index", i));
        }
        root.set("usage", usage(total));
        return root;
    }

    /** The chunk with these log-probabilities (of the tokens whose text it carries, or that came before it). */
    static ObjectNode withLogprobs(ObjectNode chunk, JsonNode logprobs) {
        ((ObjectNode) chunk.get("choices").get(0)).set("logprobs", logprobs);
        return chunk;
    }

    /** With {@code stream_options.include_usage}: the last chunk, with no choices and the usage. */
    ObjectNode usageChunk(GenerationResult end) {
        ObjectNode root = head(chat ? "chat.completion.chunk" : "text_completion");
        root.putArray("choices");
        root.set("usage", usage(end));
        return root;
    }

    ObjectNode errorEvent(ApiError e) {
        ObjectNode root = json.createObjectNode();
        ObjectNode inner = root.putObject("error");
        inner.put("message", e.getMessage());
        inner.put("type", e.type());
        inner.putNull("param");
        inner.put("code", e.code());
        return root;
    }

    private ObjectNode chunk(boolean includeUsage) {
        ObjectNode root = head(chat ? "chat.completion.chunk" : "text_completion");
        ObjectNode choice = root.putArray("choices").addObject();
        choice.put("index", 0);
        choice.putNull("logprobs");
        choice.putNull("finish_reason");
        if (includeUsage) {
            root.putNull("usage");
        }
        return root;
    }

    private ObjectNode head(String object) {
        ObjectNode root = json.createObjectNode();
        root.put("id", id);
        root.put("object", object);
        root.put("created", created);
        root.put("model", model);
        return root;
    }

    /**
     * A chat body's or usage chunk's usage with OpenAI's {@code completion_tokens_details.reasoning_tokens}: the
     * replies' reasoning texts' tokens (encoded again: the markup around them is not counted), within the completion's.
     */
    static ObjectNode withReasoningTokens(ObjectNode body, int tokens) {
        ObjectNode usage = (ObjectNode) body.get("usage");
        usage.putObject("completion_tokens_details").put("reasoning_tokens",
                Math.min(tokens, usage.path("completion_tokens").asInt()));
        return body;
    }

    private JsonNode usage(GenerationResult end) {
        ObjectNode usage = json.createObjectNode()
                .put("prompt_tokens", end.promptTokens())
                .put("completion_tokens", end.completionTokens())
                .put("total_tokens", end.promptTokens() + end.completionTokens());
        // as OpenAI reports prompt caching: the prompt tokens a kept sequence already held
        usage.putObject("prompt_tokens_details").put("cached_tokens", end.cachedTokens());
        return usage;
    }
}
