package io.moe4j.generate.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A JSON Schema validator for the keywords the constraint supports, written from the specification's rules and
 * independent of the compiler, so that tests check generated documents against the schema's meaning rather than
 * against the matcher's own reading of it. Returns the first violation, or null.
 */
final class SubsetValidator {
    private final JsonNode root;

    private SubsetValidator(JsonNode root) {
        this.root = root;
    }

    static String validate(JsonNode schema, JsonNode value) {
        return new SubsetValidator(schema).check(schema, value, "$");
    }

    private String check(JsonNode s, JsonNode v, String path) {
        if (s.isBoolean()) {
            return s.booleanValue() ? null : path + ": schema false";
        }
        if (s.has("$ref")) {
            return check(root.at(s.get("$ref").asText().substring(1)), v, path);
        }
        if (s.has("type")) {
            List<String> types = new ArrayList<>();
            if (s.get("type").isArray()) {
                s.get("type").forEach(t -> types.add(t.asText()));
            } else {
                types.add(s.get("type").asText());
            }
            if (types.stream().noneMatch(t -> hasType(v, t))) {
                return path + ": " + v.getNodeType() + " is not " + types;
            }
        }
        if (s.has("const") && !equal(s.get("const"), v)) {
            return path + ": not the const " + s.get("const");
        }
        if (s.has("enum")) {
            boolean found = false;
            for (JsonNode e : s.get("enum")) {
                found |= equal(e, v);
            }
            if (!found) {
                return path + ": " + v + " not in enum";
            }
        }
        if (s.has("anyOf")) {
            int ok = count(s.get("anyOf"), v, path);
            if (ok == 0) {
                return path + ": fits no anyOf alternative";
            }
        }
        if (s.has("oneOf")) {
            int ok = count(s.get("oneOf"), v, path);
            if (ok != 1) {
                return path + ": fits " + ok + " oneOf alternatives";
            }
        }
        if (v.isObject()) {
            String e = object(s, v, path);
            if (e != null) {
                return e;
            }
        }
        if (v.isArray()) {
            return array(s, v, path);
        }
        return null;
    }

    private int count(JsonNode alternatives, JsonNode v, String path) {
        int ok = 0;
        for (JsonNode a : alternatives) {
            if (check(a, v, path) == null) {
                ok++;
            }
        }
        return ok;
    }

    private String object(JsonNode s, JsonNode v, String path) {
        JsonNode props = s.path("properties");
        for (JsonNode r : s.path("required")) {
            if (!v.has(r.asText())) {
                return path + ": required '" + r.asText() + "' missing";
            }
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String p = path + "." + e.getKey();
            JsonNode sub = props.get(e.getKey());
            if (sub == null) {
                JsonNode add = s.get("additionalProperties");
                sub = add == null ? null : add;
            }
            if (sub != null) {
                String err = check(sub, e.getValue(), p);
                if (err != null) {
                    return err;
                }
            }
        }
        return null;
    }

    private String array(JsonNode s, JsonNode v, String path) {
        if (s.has("minItems") && v.size() < s.get("minItems").asInt()) {
            return path + ": fewer than minItems";
        }
        if (s.has("maxItems") && v.size() > s.get("maxItems").asInt()) {
            return path + ": more than maxItems";
        }
        JsonNode prefix = s.path("prefixItems");
        for (int i = 0; i < v.size(); i++) {
            JsonNode sub = i < prefix.size() ? prefix.get(i) : s.get("items");
            if (sub != null) {
                String err = check(sub, v.get(i), path + "[" + i + "]");
                if (err != null) {
                    return err;
                }
            }
        }
        return null;
    }

    private static boolean hasType(JsonNode v, String t) {
        return switch (t) {
            case "object" -> v.isObject();
            case "array" -> v.isArray();
            case "string" -> v.isTextual();
            case "number" -> v.isNumber();
            case "integer" -> v.isIntegralNumber() || (v.isNumber() && v.asDouble() == Math.rint(v.asDouble()));
            case "boolean" -> v.isBoolean();
            case "null" -> v.isNull();
            default -> false;
        };
    }

    /** JSON equality: numbers by value (1 equals 1.0), objects regardless of key order. */
    private static boolean equal(JsonNode a, JsonNode b) {
        if (a.isNumber() && b.isNumber()) {
            return a.decimalValue().compareTo(b.decimalValue()) == 0;
        }
        if (a.isObject() && b.isObject()) {
            Set<String> keys = new HashSet<>();
            a.fieldNames().forEachRemaining(keys::add);
            Set<String> other = new HashSet<>();
            b.fieldNames().forEachRemaining(other::add);
            if (!keys.equals(other)) {
                return false;
            }
            for (String k : keys) {
                if (!equal(a.get(k), b.get(k))) {
                    return false;
                }
            }
            return true;
        }
        if (a.isArray() && b.isArray()) {
            if (a.size() != b.size()) {
                return false;
            }
            for (int i = 0; i < a.size(); i++) {
                if (!equal(a.get(i), b.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }
}
