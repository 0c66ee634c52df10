package io.moe4j.text.chat;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON to the values a chat template sees, as Python's {@code json.loads} makes them: objects become
 * insertion-ordered maps, integers Long, other numbers Double, null None.
 */
public final class JsonValues {
    private JsonValues() {
    }

    public static Object toTemplateValue(JsonNode node) {
        if (node == null || node.isNull() || node.isMissingNode()) {
            return null;
        }
        if (node.isTextual()) {
            return node.textValue();
        }
        if (node.isBoolean()) {
            return node.booleanValue();
        }
        if (node.isIntegralNumber()) {
            // Python's ints have no bound: one beyond 64 bits (a tool call's argument, say) is written back exactly
            // (str, tojson); arithmetic on it is refused by the template runtime
            return node.canConvertToLong() ? node.longValue() : node.bigIntegerValue();
        }
        if (node.isNumber()) {
            return node.doubleValue();
        }
        if (node.isArray()) {
            List<Object> out = new ArrayList<>(node.size());
            node.forEach(n -> out.add(toTemplateValue(n)));
            return out;
        }
        if (node.isObject()) {
            Map<String, Object> out = new LinkedHashMap<>();
            node.properties().forEach(e -> out.put(e.getKey(), toTemplateValue(e.getValue())));
            return out;
        }
        throw new IllegalArgumentException("unsupported JSON value " + node.getNodeType());
    }
}
