package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A Responses API request ({@code POST /v1/responses}) read as the chat request it amounts to: {@code instructions}
 * and {@code input} become {@code messages} (function calls and their outputs as assistant {@code tool_calls} and
 * tool messages, a reasoning item as the next assistant message's {@code reasoning_content}), flat function tools
 * become chat tools, {@code text.format} a {@code response_format}, {@code reasoning.effort} the
 * {@code reasoning_effort}, {@code max_output_tokens} the {@code max_completion_tokens}. The chat request then goes
 * through the same checks as one sent to {@code /v1/chat/completions}; {@link #responsesParam} names its fields back
 * in this API's terms.
 *
 * <p>A {@code previous_response_id} continues a response the server stored ({@link ResponsesStore}: its conversation
 * comes before the input); {@code conversation} and {@code background} are refused by name, as are tools other than
 * functions and input other than text.
 */
final class ResponsesRequest {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    /** Fields passed to the chat request as they are. */
    private static final List<String> SAME = List.of("model", "temperature", "top_p", "parallel_tool_calls", "stream",
            "user", "metadata", "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty",
            "logit_bias", "stop", "service_tier");
    /**
     * The other fields this server knows: read below (input, tools, text, ...), checked and refused when they ask
     * what it does not do (background, conversation, ...), or only describing the caller (safety_identifier, ...).
     * Any field beyond these and {@link #SAME} is refused by name.
     */
    private static final Set<String> KNOWN = Set.of("input", "instructions", "tools", "tool_choice", "text",
            "reasoning", "max_output_tokens", "store", "previous_response_id", "conversation", "background",
            "truncation", "include", "max_tool_calls", "top_logprobs", "stream_options", "safety_identifier",
            "prompt_cache_key", "prompt_cache_retention");
    /** Chat request fields and what this API calls them, for errors the chat checks raise. */
    private static final Map<String, String> PARAMS = Map.of("messages", "input",
            "max_completion_tokens", "max_output_tokens", "max_tokens", "max_output_tokens",
            "response_format", "text.format", "reasoning_effort", "reasoning.effort");

    private ResponsesRequest() {
    }

    /**
     * The chat request body that {@code body} amounts to, continuing the stored response its
     * {@code previous_response_id} names ({@code store} null: none kept); a refusal names the Responses field at
     * fault.
     */
    static ObjectNode toChat(JsonNode body, ResponsesStore store) {
        if (!body.isObject()) {
            throw ApiError.badRequest("the body must be a JSON object", null);
        }
        if (present(body.get("conversation"))) {
            throw ApiError.badRequest("'conversation' is not supported: continue a response by its "
                    + "'previous_response_id', or send the whole conversation as 'input'", "conversation");
        }
        JsonNode keep = body.get("store");
        if (present(keep) && !keep.isBoolean()) {
            throw ApiError.badRequest("'store' must be a boolean", "store");
        }
        ArrayNode earlier = NODES.arrayNode();
        JsonNode previous = body.get("previous_response_id");
        if (present(previous)) {
            if (!previous.isTextual() || previous.asText().isEmpty()) {
                throw ApiError.badRequest("'previous_response_id' must be a response's id (a non-empty string)",
                        "previous_response_id");
            }
            ResponsesStore.Stored before = store != null ? store.get(previous.asText()) : null;
            if (before == null) {
                throw new ApiError(404, "no response '" + shortened(previous.asText()) + "' is stored here" + (store == null
                        ? "" : " (this server keeps the last " + store.capacity() + ", in memory, those sent with "
                        + "'store' true)"), "invalid_request_error", "previous_response_id", "not_found");
            }
            earlier = before.conversation();
        }
        if (body.path("background").asBoolean(false)) {
            throw ApiError.badRequest("'background' is not supported: a response is answered while the request waits",
                    "background");
        }
        JsonNode truncation = body.get("truncation");
        if (present(truncation) && !truncation.asText().equals("disabled")) {
            throw ApiError.badRequest("'truncation' must be 'disabled': a prompt past the context is refused, not cut",
                    "truncation");
        }
        JsonNode include = body.get("include");
        if (present(include) && (!include.isArray() || !include.isEmpty())) {
            for (JsonNode item : include) {
                // the reasoning's text always comes back as the reasoning item's content; nothing is encrypted
                if (!item.asText().equals("reasoning.encrypted_content")) {
                    throw ApiError.badRequest("'include' value '" + item.asText() + "' is not supported", "include");
                }
            }
        }
        if (present(body.get("max_tool_calls"))) {
            throw ApiError.badRequest("'max_tool_calls' is not supported", "max_tool_calls");
        }
        if (present(body.get("top_logprobs")) && body.get("top_logprobs").asInt(-1) != 0) {
            throw ApiError.badRequest("'top_logprobs' is not supported on /v1/responses; /v1/chat/completions serves "
                    + "log-probabilities", "top_logprobs");
        }
        ObjectNode chat = NODES.objectNode();
        body.fieldNames().forEachRemaining(field -> {
            if (SAME.contains(field)) {
                chat.set(field, body.get(field));
            } else if (!KNOWN.contains(field)) {
                throw ApiError.badRequest("'" + field + "' is not a field of /v1/responses that this server serves",
                        field);
            }
        });
        chat.set("messages", messages(body, earlier));
        if (present(body.get("max_output_tokens"))) {
            chat.set("max_completion_tokens", body.get("max_output_tokens"));
        }
        if (present(body.get("tools"))) {
            chat.set("tools", tools(body.get("tools")));
        }
        if (present(body.get("tool_choice"))) {
            chat.set("tool_choice", toolChoice(body.get("tool_choice")));
        }
        JsonNode text = body.get("text");
        if (present(text)) {
            if (!text.isObject()) {
                throw ApiError.badRequest("'text' must be an object", "text");
            }
            JsonNode format = text.get("format");
            if (present(format)) {
                JsonNode converted = format(format);
                if (converted != null) {
                    chat.set("response_format", converted);
                }
            }
            if (present(text.get("verbosity")) && !text.get("verbosity").asText().equals("medium")) {
                throw ApiError.badRequest("'text.verbosity' is not supported", "text.verbosity");
            }
        }
        JsonNode reasoning = body.get("reasoning");
        if (present(reasoning)) {
            if (!reasoning.isObject()) {
                throw ApiError.badRequest("'reasoning' must be an object", "reasoning");
            }
            if (present(reasoning.get("effort"))) {
                chat.set("reasoning_effort", reasoning.get("effort"));
            }
            // 'summary' (auto, concise, detailed): the reasoning comes back whole as the reasoning item's content,
            // and its summary stays empty
        }
        return chat;
    }

    /** The Responses name of a chat request's field (as a refusal names it). */
    static String responsesParam(String chatParam) {
        if (chatParam == null) {
            return null;
        }
        for (Map.Entry<String, String> e : PARAMS.entrySet()) {
            if (chatParam.equals(e.getKey()) || chatParam.startsWith(e.getKey() + "[")
                    || chatParam.startsWith(e.getKey() + ".")) {
                return e.getValue() + chatParam.substring(e.getKey().length());
            }
        }
        return chatParam;
    }

    /** A chat refusal in this API's terms: its field, and the field's name in its message. */
    static ApiError inResponsesTerms(ApiError e) {
        String message = inResponsesTerms(e.getMessage());
        for (Map.Entry<String, String> p : PARAMS.entrySet()) {
            message = message.replace("'" + p.getKey(), "'" + p.getValue());
        }
        message = message.replace("max_tokens (or max_completion_tokens)", "max_output_tokens");
        return new ApiError(e.status(), message, e.type(), e.param() == null ? null
                : inResponsesTerms(responsesParam(e.param())), e.code());
    }

    /**
     * Chat paths that differ beyond their first name: a tool's fields sit in the tool itself here (tools[i].x, not
     * tools[i].function.x), a JSON schema's in text.format (not response_format.json_schema).
     */
    private static String inResponsesTerms(String text) {
        return text.replaceAll("(tools\\[\\d+])\\.function\\.", "$1.")
                .replace("response_format.json_schema.", "text.format.")
                .replace("response_format.json_schema", "text.format");
    }

    /**
     * The conversation a response ends, as it is stored: the chat request's messages but its instructions (which do not
     * carry over), then the response's output as one assistant message (its text, reasoning and calls).
     */
    static ArrayNode conversation(JsonNode sent, JsonNode chat, JsonNode response) {
        ArrayNode out = NODES.arrayNode();
        JsonNode messages = chat.get("messages");
        for (int i = present(sent.get("instructions")) ? 1 : 0; i < messages.size(); i++) {
            out.add(messages.get(i).deepCopy());
        }
        ObjectNode reply = out.addObject().put("role", "assistant");
        StringBuilder text = new StringBuilder();
        StringBuilder reasoning = new StringBuilder();
        ArrayNode calls = NODES.arrayNode();
        for (JsonNode item : response.path("output")) {
            switch (item.path("type").asText()) {
                case "message" -> item.path("content").forEach(part -> text.append(part.path("text").asText()));
                case "reasoning" -> item.path("content").forEach(part -> reasoning.append(part.path("text").asText()));
                case "function_call" -> {
                    ObjectNode call = calls.addObject().put("id", item.path("call_id").asText()).put("type", "function");
                    call.putObject("function").put("name", item.path("name").asText())
                            .put("arguments", item.path("arguments").asText());
                }
                default -> { }
            }
        }
        if (text.isEmpty() && !calls.isEmpty()) {
            reply.putNull("content");
        } else {
            reply.put("content", text.toString());
        }
        if (!reasoning.isEmpty()) {
            reply.put("reasoning_content", reasoning.toString());
        }
        if (!calls.isEmpty()) {
            reply.set("tool_calls", calls);
        }
        return out;
    }

    /** An id as an error message quotes it: at most 80 characters. */
    static String shortened(String id) {
        return id.length() <= 80 ? id : id.substring(0, 77) + "...";
    }

    private static boolean present(JsonNode v) {
        return v != null && !v.isNull();
    }

    /**
     * {@code instructions} as a system message, the {@code earlier} conversation (a stored response's), then the
     * input's items as chat messages.
     */
    private static ArrayNode messages(JsonNode body, ArrayNode earlier) {
        ArrayNode messages = NODES.arrayNode();
        JsonNode instructions = body.get("instructions");
        if (present(instructions)) {
            if (!instructions.isTextual()) {
                throw ApiError.badRequest("'instructions' must be a string", "instructions");
            }
            messages.addObject().put("role", "system").put("content", instructions.asText());
        }
        messages.addAll(earlier.deepCopy());
        JsonNode input = body.get("input");
        if (!present(input)) {
            throw ApiError.badRequest("'input' is required", "input");
        }
        if (input.isTextual()) {
            messages.addObject().put("role", "user").put("content", input.asText());
            return messages;
        }
        if (!input.isArray() || input.isEmpty()) {
            throw ApiError.badRequest("'input' must be a string or a non-empty array of input items", "input");
        }
        ObjectNode calling = null; // the assistant message that consecutive function calls join
        String reasoning = null;   // a reasoning item's text, for the next assistant message
        Set<String> calls = new java.util.HashSet<>(); // the call ids of the function calls so far
        for (JsonNode m : earlier) {
            m.path("tool_calls").forEach(c -> calls.add(c.path("id").asText()));
        }
        for (int i = 0; i < input.size(); i++) {
            JsonNode item = input.get(i);
            String at = "input[" + i + "]";
            if (!item.isObject()) {
                throw ApiError.badRequest("'" + at + "' must be an object", at);
            }
            String type = item.path("type").asText(item.has("role") ? "message" : "");
            switch (type) {
                case "message" -> {
                    ObjectNode m = message(item, at);
                    if (m.get("role").asText().equals("assistant") && reasoning != null) {
                        m.put("reasoning_content", reasoning);
                        reasoning = null;
                    }
                    messages.add(m);
                    calling = null;
                }
                case "function_call" -> {
                    if (calling == null) {
                        calling = messages.addObject().put("role", "assistant");
                        calling.putNull("content");
                        if (reasoning != null) {
                            calling.put("reasoning_content", reasoning);
                            reasoning = null;
                        }
                        calling.putArray("tool_calls");
                    }
                    ObjectNode call = ((ArrayNode) calling.get("tool_calls")).addObject();
                    calls.add(text(item, "call_id", at));
                    call.put("id", text(item, "call_id", at)).put("type", "function");
                    call.putObject("function").put("name", text(item, "name", at))
                            .put("arguments", text(item, "arguments", at));
                }
                case "function_call_output" -> {
                    JsonNode output = item.get("output");
                    String content;
                    if (output != null && output.isTextual()) {
                        content = output.asText();
                    } else if (output != null && output.isArray()) {
                        content = joinedText(output, at + ".output", "input_text");
                    } else {
                        throw ApiError.badRequest("'" + at + ".output' must be a string or an array of input_text "
                                + "parts", at + ".output");
                    }
                    String callId = text(item, "call_id", at);
                    if (!calls.contains(callId)) {
                        throw ApiError.badRequest("'" + at + ".call_id' is '" + callId + "', which no earlier "
                                + "function_call item of the input holds", at + ".call_id");
                    }
                    messages.addObject().put("role", "tool").put("tool_call_id", callId).put("content", content);
                    calling = null;
                }
                case "reasoning" -> {
                    JsonNode content = item.get("content");
                    reasoning = present(content) ? joinedText(content, at + ".content", "reasoning_text") : "";
                }
                case "" -> throw ApiError.badRequest("'" + at + ".type' is required (or a 'role' for a message)",
                        at + ".type");
                default -> throw ApiError.badRequest("'" + at + ".type' is '" + type + "'; this server takes message, "
                        + "function_call, function_call_output and reasoning items", at + ".type");
            }
        }
        return messages;
    }

    /** An input message as a chat message: its content a string or parts of text. */
    private static ObjectNode message(JsonNode item, String at) {
        String role = text(item, "role", at);
        if (!Set.of("user", "system", "developer", "assistant").contains(role)) {
            throw ApiError.badRequest("'" + at + ".role' is '" + role + "'; expected user, system, developer or "
                    + "assistant", at + ".role");
        }
        JsonNode content = item.get("content");
        String text;
        if (content != null && content.isTextual()) {
            text = content.asText();
        } else if (content != null && content.isArray()) {
            text = joinedText(content, at + ".content", role.equals("assistant") ? "output_text" : "input_text");
        } else {
            throw ApiError.badRequest("'" + at + ".content' must be a string or an array of text parts",
                    at + ".content");
        }
        return NODES.objectNode().put("role", role).put("content", text);
    }

    /** The text of an array of parts, each of {@code type} (or refusal, for an assistant's). */
    private static String joinedText(JsonNode parts, String at, String type) {
        if (!parts.isArray()) {
            throw ApiError.badRequest("'" + at + "' must be an array of " + type + " parts", at);
        }
        StringBuilder joined = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            JsonNode part = parts.get(i);
            String where = at + "[" + i + "]";
            String partType = part.path("type").asText("");
            boolean textual = partType.equals(type) || (type.equals("output_text") && partType.equals("refusal"))
                    || (type.equals("input_text") && partType.equals("output_text"));
            if (!part.isObject() || !textual) {
                throw ApiError.badRequest("'" + where + ".type' is '" + partType + "'; only " + type + " parts are "
                        + "supported", where + ".type");
            }
            joined.append(text(part, partType.equals("refusal") ? "refusal" : "text", where));
        }
        return joined.toString();
    }

    private static String text(JsonNode item, String field, String at) {
        JsonNode v = item.get(field);
        if (v == null || !v.isTextual()) {
            throw ApiError.badRequest("'" + at + "." + field + "' is required and must be a string", at + "." + field);
        }
        return v.asText();
    }

    /** Flat function tools as chat tools ({@code {type, function: {name, description, parameters, strict}}}). */
    private static ArrayNode tools(JsonNode tools) {
        if (!tools.isArray()) {
            throw ApiError.badRequest("'tools' must be an array", "tools");
        }
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < tools.size(); i++) {
            JsonNode tool = tools.get(i);
            String at = "tools[" + i + "]";
            String type = tool.path("type").asText("");
            if (!type.equals("function")) {
                throw ApiError.badRequest("'" + at + ".type' is '" + type + "'; only function tools are served (the "
                        + "model's caller runs them)", at + ".type");
            }
            ObjectNode function = out.addObject().put("type", "function").putObject("function");
            function.put("name", text(tool, "name", at));
            for (String field : List.of("description", "parameters", "strict")) {
                if (present(tool.get(field))) {
                    function.set(field, tool.get(field));
                }
            }
        }
        return out;
    }

    /** none, auto, required, or {@code {type: function, name}} as chat's tool_choice. */
    private static JsonNode toolChoice(JsonNode choice) {
        if (choice.isTextual()) {
            return choice;
        }
        if (choice.isObject() && choice.path("type").asText("").equals("function")) {
            ObjectNode out = NODES.objectNode().put("type", "function");
            out.putObject("function").put("name", text(choice, "name", "tool_choice"));
            return out;
        }
        throw ApiError.badRequest("'tool_choice' must be none, auto, required or {\"type\": \"function\", \"name\": "
                + "...}", "tool_choice");
    }

    /** {@code text.format} as a response_format: null for plain text. */
    private static JsonNode format(JsonNode format) {
        String type = format.path("type").asText("");
        switch (type) {
            case "text" -> {
                return null;
            }
            case "json_object" -> {
                return NODES.objectNode().put("type", "json_object");
            }
            case "json_schema" -> {
                ObjectNode out = NODES.objectNode().put("type", "json_schema");
                ObjectNode schema = out.putObject("json_schema");
                for (String field : List.of("name", "schema", "strict", "description")) {
                    if (present(format.get(field))) {
                        schema.set(field, format.get(field));
                    }
                }
                return out;
            }
            default -> throw ApiError.badRequest("'text.format.type' must be text, json_object or json_schema, got '"
                    + type + "'", "text.format.type");
        }
    }
}
