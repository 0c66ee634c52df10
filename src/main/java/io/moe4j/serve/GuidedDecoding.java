package io.moe4j.serve;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import io.moe4j.generate.constraint.AnswerGrammar;
import io.moe4j.generate.constraint.JsonGrammar;
import io.moe4j.generate.constraint.TextGrammar;
import io.moe4j.generate.constraint.TokenTrie;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * vLLM's guided decoding fields, read into the grammar the reply is held to: the older top-level {@code guided_json},
 * {@code guided_regex} and {@code guided_choice}, and the newer {@code structured_outputs} object with one of
 * {@code json}, {@code regex}, {@code choice} or {@code json_object}. Context-free grammars and structural tags are
 * refused by name, as is a request that asks for two of them. Served on chat and completions alike.
 *
 * @param grammar what the answer is held to
 * @param field   the request field that asked for it, for the errors that name it
 */
record GuidedDecoding(AnswerGrammar grammar, String field) {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> TOP_LEVEL = List.of("guided_json", "guided_regex", "guided_choice",
            "guided_grammar", "guided_whitespace_pattern", "structural_tag", "structured_outputs");
    /** structured_outputs' switches of vLLM's own backends: accepted when off, since this one never does them. */
    private static final Set<String> NEUTRAL_SWITCHES = Set.of("disable_fallback", "disable_any_whitespace",
            "disable_additional_properties");

    /**
     * The guided decoding {@code body} asks for, or null when none.
     *
     * @param trie the model's vocabulary trie: a JSON schema's fixed pieces reckoned in its tokens (bytes where null)
     * @throws ApiError a 400 naming the field: malformed, unsupported, or more than one kind asked for
     */
    static GuidedDecoding read(JsonNode body, TokenTrie trie) {
        List<String> asked = new ArrayList<>();
        for (String field : TOP_LEVEL) {
            JsonNode v = body.get(field);
            if (v != null && !v.isNull()) {
                asked.add(field);
            }
        }
        if (asked.isEmpty()) {
            return null;
        }
        if (asked.size() > 1) {
            throw ApiError.badRequest("'" + asked.get(0) + "' and '" + asked.get(1) + "' each constrain the reply; "
                    + "send one", asked.get(1));
        }
        String field = asked.getFirst();
        JsonNode v = body.get(field);
        return switch (field) {
            case "guided_json" -> json(v, field, trie);
            case "guided_regex" -> regex(v, field);
            case "guided_choice" -> choice(v, field);
            case "guided_grammar" -> throw grammarRefused(field);
            case "structural_tag" -> throw ApiError.badRequest("'structural_tag' is not supported: send a regular "
                    + "expression (guided_regex), a list of choices (guided_choice) or a JSON schema (guided_json)",
                    field);
            case "guided_whitespace_pattern" -> throw ApiError.badRequest("'guided_whitespace_pattern' is not "
                    + "supported (JSON answers allow at most " + JsonGrammar.DEFAULT_MAX_WHITESPACE + " whitespace "
                    + "bytes between tokens)", field);
            default -> structured(v, trie);
        };
    }

    private static GuidedDecoding structured(JsonNode v, TokenTrie trie) {
        if (!v.isObject()) {
            throw ApiError.badRequest("'structured_outputs' must be an object with one of json, regex, choice or "
                    + "json_object", "structured_outputs");
        }
        List<String> kinds = new ArrayList<>();
        for (var e : v.properties()) {
            String key = e.getKey();
            String at = "structured_outputs." + key;
            JsonNode value = e.getValue();
            if (value.isNull() || NEUTRAL_SWITCHES.contains(key) && value.isBoolean() && !value.booleanValue()) {
                continue;
            }
            switch (key) {
                case "json", "regex", "choice", "grammar", "structural_tag" -> kinds.add(key);
                case "json_object" -> {
                    if (!value.isBoolean()) {
                        throw ApiError.badRequest("'" + at + "' must be a boolean", at);
                    }
                    if (value.booleanValue()) {
                        kinds.add(key);
                    }
                }
                default -> throw ApiError.badRequest("'" + at + "' is not supported", at);
            }
        }
        if (kinds.size() != 1) {
            throw ApiError.badRequest("'structured_outputs' must hold exactly one of json, regex, choice or "
                    + "json_object" + (kinds.isEmpty() ? "" : ", got " + String.join(", ", kinds)),
                    "structured_outputs");
        }
        String kind = kinds.getFirst();
        String at = "structured_outputs." + kind;
        JsonNode value = v.get(kind);
        return switch (kind) {
            case "json" -> json(value, at, trie);
            case "regex" -> regex(value, at);
            case "choice" -> choice(value, at);
            case "json_object" -> new GuidedDecoding(JsonGrammar.anyObject(), at);
            case "grammar" -> throw grammarRefused(at);
            default -> throw ApiError.badRequest("'" + at + "' is not supported: send json, regex or choice", at);
        };
    }

    private static GuidedDecoding json(JsonNode v, String field, TokenTrie trie) {
        JsonNode schema = v;
        if (v.isTextual()) {
            try {
                schema = JSON.readTree(v.asText());
            } catch (JsonProcessingException e) {
                throw ApiError.badRequest("'" + field + "' is a string that is not JSON: "
                        + e.getOriginalMessage(), field);
            }
        }
        if (schema == null || !schema.isObject()) {
            throw ApiError.badRequest("'" + field + "' must be a JSON schema (an object)", field);
        }
        try {
            return new GuidedDecoding(trie == null ? JsonGrammar.of(schema) : JsonGrammar.of(schema, trie), field);
        } catch (MoeException e) {
            throw ApiError.badRequest("'" + field + "': " + e.getMessage(), field);
        }
    }

    private static GuidedDecoding regex(JsonNode v, String field) {
        if (!v.isTextual()) {
            throw ApiError.badRequest("'" + field + "' must be a string (a regular expression)", field);
        }
        try {
            return new GuidedDecoding(TextGrammar.regex(v.asText(), field), field);
        } catch (MoeException e) {
            throw ApiError.badRequest(e.getMessage(), field);
        }
    }

    private static GuidedDecoding choice(JsonNode v, String field) {
        if (!v.isArray() || v.isEmpty()) {
            throw ApiError.badRequest("'" + field + "' must be a non-empty array of strings", field);
        }
        List<String> choices = new ArrayList<>();
        for (int i = 0; i < v.size(); i++) {
            if (!v.get(i).isTextual()) {
                throw ApiError.badRequest("'" + field + "[" + i + "]' must be a string", field);
            }
            choices.add(v.get(i).asText());
        }
        try {
            return new GuidedDecoding(TextGrammar.choice(choices, field), field);
        } catch (MoeException e) {
            throw ApiError.badRequest(e.getMessage(), field);
        }
    }

    private static ApiError grammarRefused(String field) {
        return ApiError.badRequest("'" + field + "': context-free grammars are not supported; send a regular "
                + "expression (guided_regex), a list of choices (guided_choice) or a JSON schema (guided_json)",
                field);
    }
}
