package io.moe4j.testing;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.List;

/**
 * A small JSON-schema validator for tests, independent of the constraint compiler: type, properties, required,
 * additionalProperties (false or a schema), items, minItems, maxItems, enum, const, anyOf, oneOf.
 */
public final class SchemaCheck {
    private SchemaCheck() {
    }

    /** What in {@code value} breaks {@code schema}; empty when it is valid. */
    public static List<String> errors(JsonNode schema, JsonNode value) {
        List<String> out = new ArrayList<>();
        check(schema, value, "$", out);
        return out;
    }

    private static void check(JsonNode s, JsonNode v, String at, List<String> out) {
        if (s == null || s.isBoolean() && s.asBoolean()) {
            return;
        }
        if (s.has("const") && !s.get("const").equals(v)) {
            out.add(at + ": not the const " + s.get("const"));
        }
        if (s.has("enum")) {
            boolean found = false;
            for (JsonNode e : s.get("enum")) {
                found |= sameValue(e, v);
            }
            if (!found) {
                out.add(at + ": " + v + " not in enum " + s.get("enum"));
            }
        }
        for (String key : new String[] {"anyOf", "oneOf"}) {
            if (s.has(key)) {
                int matches = 0;
                for (JsonNode alt : s.get(key)) {
                    matches += errors(alt, v).isEmpty() ? 1 : 0;
                }
                if (matches == 0) {
                    out.add(at + ": matches none of " + key);
                }
            }
        }
        if (s.has("type")) {
            List<String> types = new ArrayList<>();
            if (s.get("type").isArray()) {
                s.get("type").forEach(t -> types.add(t.asText()));
            } else {
                types.add(s.get("type").asText());
            }
            boolean ok = false;
            for (String t : types) {
                ok |= switch (t) {
                    case "object" -> v.isObject();
                    case "array" -> v.isArray();
                    case "string" -> v.isTextual();
                    case "integer" -> v.isIntegralNumber() || v.isNumber() && v.asDouble() == Math.rint(v.asDouble());
                    case "number" -> v.isNumber();
                    case "boolean" -> v.isBoolean();
                    case "null" -> v.isNull();
                    default -> false;
                };
            }
            if (!ok) {
                out.add(at + ": " + v + " is not of type " + types);
                return;
            }
        }
        if (v.isObject()) {
            JsonNode props = s.path("properties");
            for (JsonNode r : s.path("required")) {
                if (!v.has(r.asText())) {
                    out.add(at + ": missing required '" + r.asText() + "'");
                }
            }
            v.properties().forEach(e -> {
                if (props.has(e.getKey())) {
                    check(props.get(e.getKey()), e.getValue(), at + "." + e.getKey(), out);
                } else if (s.has("additionalProperties")) {
                    JsonNode extra = s.get("additionalProperties");
                    if (extra.isBoolean() && !extra.asBoolean()) {
                        out.add(at + ": property '" + e.getKey() + "' not allowed");
                    } else if (extra.isObject()) {
                        check(extra, e.getValue(), at + "." + e.getKey(), out);
                    }
                }
            });
        }
        if (v.isArray()) {
            if (s.has("minItems") && v.size() < s.get("minItems").asInt()) {
                out.add(at + ": fewer than " + s.get("minItems") + " items");
            }
            if (s.has("maxItems") && v.size() > s.get("maxItems").asInt()) {
                out.add(at + ": more than " + s.get("maxItems") + " items");
            }
            if (s.has("items")) {
                for (int i = 0; i < v.size(); i++) {
                    check(s.get("items"), v.get(i), at + "[" + i + "]", out);
                }
            }
        }
    }

    private static boolean sameValue(JsonNode a, JsonNode b) {
        if (a.isNumber() && b.isNumber()) {
            return a.decimalValue().compareTo(b.decimalValue()) == 0;
        }
        return a.equals(b);
    }
}
