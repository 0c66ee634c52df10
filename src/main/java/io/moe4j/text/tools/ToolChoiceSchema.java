package io.moe4j.text.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Tool calls under {@code tool_choice: "required"} or a named function, as constrained decoding produces them: the
 * model writes a JSON array of {@code {"name": ..., "arguments": {...}}} objects (one object for a named function),
 * a schema built from the request's tools keeps it to their names and parameter schemas, and {@link #calls} turns
 * the text into tool calls. The family's own call markers are not used: the JSON itself is the call.
 */
public final class ToolChoiceSchema {
    private static final ObjectMapper JSON = new ObjectMapper();

    private ToolChoiceSchema() {
    }

    /** An array of one or more calls to any of {@code tools} (OpenAI's {@code tools} list). */
    public static JsonNode required(JsonNode tools) {
        ArrayNode alternatives = JSON.createArrayNode();
        for (JsonNode tool : functions(tools)) {
            alternatives.add(call(tool));
        }
        ObjectNode schema = JSON.createObjectNode().put("type", "array").put("minItems", 1);
        schema.putObject("items").set("anyOf", alternatives);
        return schema;
    }

    /** One call to the function {@code name}, which must be among {@code tools}. */
    public static JsonNode named(JsonNode tools, String name) {
        for (JsonNode tool : functions(tools)) {
            if (tool.path("name").asText().equals(name)) {
                return call(tool);
            }
        }
        throw new MoeException("tool_choice names function '" + name + "', which is not among the request's tools");
    }

    private static List<JsonNode> functions(JsonNode tools) {
        if (tools == null || !tools.isArray() || tools.isEmpty()) {
            throw new MoeException("tools: a tool_choice that requires a call needs a non-empty tools list");
        }
        List<JsonNode> functions = new ArrayList<>();
        for (int i = 0; i < tools.size(); i++) {
            JsonNode f = tools.get(i).path("function");
            if (!tools.get(i).path("type").asText("function").equals("function") || !f.path("name").isTextual()) {
                throw new MoeException("tools[" + i + "]: expected {\"type\": \"function\", \"function\": {\"name\": "
                        + "...}}");
            }
            functions.add(f);
        }
        return functions;
    }

    private static ObjectNode call(JsonNode function) {
        ObjectNode schema = JSON.createObjectNode().put("type", "object");
        ObjectNode properties = schema.putObject("properties");
        properties.putObject("name").put("const", function.get("name").asText());
        JsonNode parameters = function.get("parameters");
        properties.set("arguments", parameters == null || parameters.isNull()
                ? JSON.createObjectNode().put("type", "object") : parameters);
        schema.putArray("required").add("name").add("arguments");
        schema.put("additionalProperties", false);
        return schema;
    }

    /**
     * The calls in constrained output: an array of calls or one call object. Output that does not hold them (it
     * cannot, when the constraint ran to the end) fails with a {@link MoeException}.
     */
    public static List<ToolCall> calls(String text, ToolCallIds ids) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (IOException e) {
            throw new MoeException("tool-call output is not JSON: " + e.getMessage(), e);
        }
        List<JsonNode> items = new ArrayList<>();
        if (root != null && root.isArray()) {
            root.forEach(items::add);
        } else {
            items.add(root);
        }
        List<ToolCall> calls = new ArrayList<>();
        for (JsonNode item : items) {
            if (item == null || !item.path("name").isTextual() || !item.path("arguments").isObject()) {
                throw new MoeException("tool-call output item is not {\"name\": ..., \"arguments\": {...}}: " + item);
            }
            calls.add(new ToolCall(ids.next(), item.get("name").asText(), item.get("arguments").toString()));
        }
        return calls;
    }
}
