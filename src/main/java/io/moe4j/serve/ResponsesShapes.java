package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.generate.FinishReason;
import io.moe4j.text.tools.ToolCall;

/**
 * The JSON of one Responses API answer: the {@code response} object (whole, or as the stream's first and last events
 * carry it), its output items (reasoning, message, function call) and the stream's events. The request's settings are
 * echoed as OpenAI does; fields the SDKs require but this server does not fill are null.
 *
 * @param request     the Responses request as sent (its settings are echoed)
 * @param sampling    the sampling the reply was drawn with (its temperature and top_p are echoed, the server's
 *                    defaults where the request sent none)
 * @param countTokens the tokens a text encodes to (the usage's reasoning tokens are its reasoning's)
 */
record ResponsesShapes(ObjectMapper json, String id, long createdAt, String model, JsonNode request,
                       io.moe4j.generate.SamplingParams sampling, java.util.function.ToIntFunction<String> countTokens) {

    /**
     * The response object: {@code status} in_progress, completed, incomplete or failed; {@code end} null while in
     * progress; {@code error} the failure's message, or null.
     */
    ObjectNode response(String status, ArrayNode output, GenerationResult end, String error) {
        ObjectNode r = json.createObjectNode();
        r.put("id", id).put("object", "response").put("created_at", createdAt).put("status", status);
        if (end != null && !status.equals("failed")) {
            r.put("completed_at", System.currentTimeMillis() / 1000);
        } else {
            r.putNull("completed_at");
        }
        if (error != null) {
            r.putObject("error").put("code", "server_error").put("message", error);
        } else {
            r.putNull("error");
        }
        if (status.equals("incomplete")) {
            r.putObject("incomplete_details").put("reason", "max_output_tokens");
        } else {
            r.putNull("incomplete_details");
        }
        r.set("instructions", request.path("instructions").isTextual() ? request.get("instructions") : null);
        r.set("metadata", request.path("metadata").isObject() ? request.get("metadata") : json.createObjectNode());
        r.put("model", model);
        r.set("output", output);
        r.put("parallel_tool_calls", request.path("parallel_tool_calls").asBoolean(true));
        r.put("temperature", sampling.temperature());
        r.put("top_p", sampling.topP());
        r.set("tool_choice", request.has("tool_choice") && !request.get("tool_choice").isNull()
                ? request.get("tool_choice") : json.getNodeFactory().textNode("auto"));
        r.set("tools", tools());
        r.set("max_output_tokens", request.path("max_output_tokens").isIntegralNumber()
                ? request.get("max_output_tokens") : null);
        r.set("previous_response_id", request.path("previous_response_id").isTextual()
                ? request.get("previous_response_id") : null);
        r.set("reasoning", request.path("reasoning").isObject() ? request.get("reasoning") : null);
        ObjectNode text = r.putObject("text");
        text.set("format", request.path("text").path("format").isObject() ? request.get("text").get("format")
                : json.createObjectNode().put("type", "text"));
        r.put("truncation", "disabled");
        r.put("store", stores(request));
        r.put("background", false);
        r.putNull("access_programs");
        r.set("user", request.path("user").isTextual() ? request.get("user") : null);
        r.set("usage", end == null ? null : usage(end, reasoningTokens(output)));
        return r;
    }

    /** The tokens of the reasoning items' texts (the reply is read as text, so they are counted by encoding it). */
    private int reasoningTokens(ArrayNode output) {
        int n = 0;
        for (JsonNode item : output) {
            if (item.path("type").asText().equals("reasoning")) {
                for (JsonNode part : item.path("content")) {
                    n += countTokens.applyAsInt(part.path("text").asText());
                }
            }
        }
        return n;
    }

    /** Whether the request's response is stored ({@code store}, true unless false, as OpenAI's default). */
    static boolean stores(JsonNode request) {
        return request.path("store").asBoolean(true);
    }

    /** The request's function tools, each with every field the API lists (null where not sent). */
    private ArrayNode tools() {
        ArrayNode out = json.createArrayNode();
        for (JsonNode t : request.path("tools")) {
            ObjectNode tool = out.addObject().put("type", "function").put("name", t.path("name").asText());
            tool.set("description", t.path("description").isTextual() ? t.get("description") : null);
            tool.set("parameters", t.path("parameters").isObject() ? t.get("parameters") : null);
            tool.set("strict", t.path("strict").isBoolean() ? t.get("strict") : null);
        }
        return out;
    }

    /** The usage: the prompt's tokens (those a kept sequence held as cached), the reply's, its reasoning's. */
    private ObjectNode usage(GenerationResult end, int reasoningTokens) {
        ObjectNode u = json.createObjectNode();
        u.put("input_tokens", end.promptTokens());
        // cache_write_tokens: a prompt this server keeps for later requests is not billed apart, so none
        u.putObject("input_tokens_details").put("cached_tokens", end.cachedTokens()).put("cache_write_tokens", 0);
        u.put("output_tokens", end.completionTokens());
        // the markup around the reasoning is not counted, so the count stays within the reply's
        u.putObject("output_tokens_details").put("reasoning_tokens", Math.min(reasoningTokens,
                end.completionTokens()));
        u.put("total_tokens", end.promptTokens() + end.completionTokens());
        return u;
    }

    /** The status a finished reply gives its response. */
    static String status(GenerationResult end) {
        return end.reason() == FinishReason.LENGTH ? "incomplete" : "completed";
    }

    ObjectNode messageItem(String itemId, String text, String status) {
        ObjectNode item = json.createObjectNode().put("type", "message").put("id", itemId).put("status", status)
                .put("role", "assistant");
        ArrayNode content = item.putArray("content");
        if (text != null) {
            content.add(outputText(text));
        }
        return item;
    }

    ObjectNode outputText(String text) {
        ObjectNode part = json.createObjectNode().put("type", "output_text").put("text", text);
        part.putArray("annotations");
        part.putArray("logprobs");
        return part;
    }

    /** A reasoning item: the model's reasoning as its content (no summary is written). */
    ObjectNode reasoningItem(String itemId, String text, String status) {
        ObjectNode item = json.createObjectNode().put("type", "reasoning").put("id", itemId).put("status", status);
        item.putArray("summary");
        ArrayNode content = item.putArray("content");
        if (text != null) {
            content.add(reasoningText(text));
        }
        return item;
    }

    ObjectNode reasoningText(String text) {
        return json.createObjectNode().put("type", "reasoning_text").put("text", text);
    }

    ObjectNode functionCallItem(String itemId, ToolCall call, String arguments, String status) {
        return json.createObjectNode().put("type", "function_call").put("id", itemId).put("call_id", call.id())
                .put("name", call.name()).put("arguments", arguments).put("status", status);
    }

    /** A stream event of {@code type} with its sequence number. */
    ObjectNode event(String type, int sequence) {
        return json.createObjectNode().put("type", type).put("sequence_number", sequence);
    }
}
