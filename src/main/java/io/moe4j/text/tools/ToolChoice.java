package io.moe4j.text.tools;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;

/**
 * A request's {@code tool_choice}: the model may call tools ({@code auto}), must not ({@code none}), must call one
 * or more ({@code required}), or must call the named function. Bad input fails with a {@link MoeException} whose
 * message starts with the field at fault, ready for a 400.
 */
public sealed interface ToolChoice {

    record Auto() implements ToolChoice {
    }

    record None() implements ToolChoice {
    }

    record Required() implements ToolChoice {
    }

    record Named(String name) implements ToolChoice {
    }

    /**
     * The JSON schema constrained decoding must follow for this choice over {@code tools} ({@link ToolChoiceSchema}),
     * or null when the model writes freely.
     */
    default JsonNode schema(JsonNode tools) {
        return switch (this) {
            case Required r -> ToolChoiceSchema.required(tools);
            case Named n -> ToolChoiceSchema.named(tools, n.name());
            default -> null;
        };
    }

    /** Reads OpenAI's {@code tool_choice} against the request's {@code tools}; absent: auto with tools, else none. */
    static ToolChoice parse(JsonNode choice, JsonNode tools) {
        boolean hasTools = tools != null && tools.isArray() && !tools.isEmpty();
        if (choice == null || choice.isNull() || choice.isMissingNode()) {
            return hasTools ? new Auto() : new None();
        }
        ToolChoice parsed;
        if (choice.isTextual()) {
            parsed = switch (choice.asText()) {
                case "auto" -> new Auto();
                case "none" -> new None();
                case "required" -> new Required();
                default -> throw new MoeException("tool_choice: '" + choice.asText()
                        + "' is not one of auto, none, required or {\"type\": \"function\", ...}");
            };
        } else if (choice.isObject() && choice.path("function").path("name").isTextual()) {
            parsed = new Named(choice.get("function").get("name").asText());
        } else {
            throw new MoeException("tool_choice: expected auto, none, required or {\"type\": \"function\", "
                    + "\"function\": {\"name\": ...}}, got " + choice);
        }
        if ((parsed instanceof Required || parsed instanceof Named) && !hasTools) {
            throw new MoeException("tool_choice: '" + describe(parsed) + "' needs a non-empty tools list");
        }
        if (parsed instanceof Named n) {
            boolean found = false;
            for (JsonNode t : tools) {
                found |= t.path("function").path("name").asText().equals(n.name());
            }
            if (!found) {
                throw new MoeException("tool_choice: function '" + n.name() + "' is not among the request's tools");
            }
        }
        return parsed;
    }

    private static String describe(ToolChoice c) {
        return c instanceof Named n ? n.name() : "required";
    }
}
