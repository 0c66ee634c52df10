package io.moe4j.generate.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;

/**
 * A request's {@code response_format}: free text, any JSON object, or JSON that fits a schema. Bad input fails with
 * a {@link MoeException} whose message starts with the field at fault, ready for a 400.
 *
 * @param type    {@code text}, {@code json_object} or {@code json_schema}
 * @param grammar what constrained decoding keeps the output to; null for text
 */
public record ResponseFormat(String type, JsonGrammar grammar) {

    public static final ResponseFormat TEXT = new ResponseFormat("text", null);

    public boolean isConstrained() {
        return grammar != null;
    }

    /** Reads OpenAI's {@code response_format} object; null or missing means text. */
    public static ResponseFormat parse(JsonNode node) {
        return parse(node, null);
    }

    /**
     * As {@link #parse(JsonNode)}, with a schema's budget reckoned in {@code trie}'s tokens (see
     * {@link JsonGrammar#of(JsonNode, TokenTrie)}); null: in bytes.
     */
    public static ResponseFormat parse(JsonNode node, TokenTrie trie) {
        if (node == null || node.isNull() || node.isMissingNode()) {
            return TEXT;
        }
        if (!node.isObject() || !node.path("type").isTextual()) {
            throw new MoeException("response_format: expected an object with a 'type', got " + node);
        }
        String type = node.get("type").asText();
        return switch (type) {
            case "text" -> TEXT;
            case "json_object" -> new ResponseFormat(type, JsonGrammar.anyObject());
            case "json_schema" -> {
                JsonNode schema = node.path("json_schema").get("schema");
                if (schema == null || schema.isNull()) {
                    throw new MoeException("response_format.json_schema.schema: missing");
                }
                try {
                    JsonGrammar grammar = trie == null ? JsonGrammar.of(schema) : JsonGrammar.of(schema, trie);
                    yield new ResponseFormat(type, grammar);
                } catch (MoeException e) {
                    throw new MoeException("response_format.json_schema.schema: " + e.getMessage(), e);
                }
            }
            default -> throw new MoeException("response_format.type: '" + type
                    + "' is not one of text, json_object, json_schema");
        };
    }
}
