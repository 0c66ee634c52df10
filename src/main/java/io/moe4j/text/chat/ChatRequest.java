package io.moe4j.text.chat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;

import java.time.Clock;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * What a chat template renders: the messages (OpenAI-style objects, keys kept in order), whether to open the
 * assistant's turn, the tools (null when none, as transformers passes None), further keyword arguments the
 * template reads ({@code reasoning_effort}, {@code model_identity}, {@code builtin_tools},
 * {@code enable_thinking} ...), the clock {@code strftime_now} reads, and whether the text should stop inside
 * the final message so that generation continues it (transformers' {@code continue_final_message}).
 */
public record ChatRequest(ArrayNode messages, boolean addGenerationPrompt, ArrayNode tools,
                          Map<String, JsonNode> templateArguments, Clock clock, boolean continueFinalMessage) {
    /** Keys of a request line that are not template keyword arguments. */
    private static final Set<String> NOT_ARGUMENTS = Set.of(
            "messages", "add_generation_prompt", "tools", "date", "tokenizer", "kind", "text", "ids", "decoded",
            "continue_final_message");

    public ChatRequest {
        Objects.requireNonNull(messages, "messages");
        templateArguments = Map.copyOf(templateArguments == null ? Map.of() : templateArguments);
        clock = clock == null ? Clock.systemDefaultZone() : clock;
    }

    public ChatRequest(ArrayNode messages, boolean addGenerationPrompt, ArrayNode tools,
                       Map<String, JsonNode> templateArguments, Clock clock) {
        this(messages, addGenerationPrompt, tools, templateArguments, clock, false);
    }

    public static ChatRequest of(ArrayNode messages, boolean addGenerationPrompt) {
        return new ChatRequest(messages, addGenerationPrompt, null, Map.of(), null);
    }

    public ChatRequest withTools(ArrayNode tools) {
        return new ChatRequest(messages, addGenerationPrompt, tools, templateArguments, clock, continueFinalMessage);
    }

    /** The rendered text ends inside the final message (its content, without the template's end of turn). */
    public ChatRequest withContinueFinalMessage(boolean continueFinal) {
        return new ChatRequest(messages, addGenerationPrompt, tools, templateArguments, clock, continueFinal);
    }

    public ChatRequest withArgument(String name, JsonNode value) {
        Map<String, JsonNode> args = new LinkedHashMap<>(templateArguments);
        args.put(name, value);
        return new ChatRequest(messages, addGenerationPrompt, tools, args, clock, continueFinalMessage);
    }

    public ChatRequest withClock(Clock clock) {
        return new ChatRequest(messages, addGenerationPrompt, tools, templateArguments, clock, continueFinalMessage);
    }

    /** A clock fixed at midnight UTC of {@code date} ({@code yyyy-MM-dd}), for reproducible renders. */
    public static Clock fixedDate(String date) {
        try {
            return Clock.fixed(LocalDate.parse(date).atStartOfDay(ZoneOffset.UTC).toInstant(), ZoneOffset.UTC);
        } catch (java.time.format.DateTimeParseException e) {
            throw new IllegalArgumentException("date '" + date + "' is not yyyy-MM-dd", e);
        }
    }

    /**
     * A request from one JSON line as {@code moe tokenize} reads it and the tokenizer fixtures write it:
     * {@code messages}, {@code add_generation_prompt}, {@code tools}, {@code date}, and every other key (except
     * {@code tokenizer}, {@code kind}, {@code text}, {@code ids}, {@code decoded}) as a template argument.
     */
    public static ChatRequest fromJson(JsonNode line) {
        JsonNode messages = line.get("messages");
        if (messages == null || !messages.isArray()) {
            throw new IllegalArgumentException("chat request needs a 'messages' array");
        }
        JsonNode agp = line.get("add_generation_prompt");
        if (agp != null && !agp.isBoolean()) {
            throw new IllegalArgumentException("'add_generation_prompt' must be true or false, not " + agp);
        }
        JsonNode tools = line.get("tools");
        if (tools != null && !tools.isNull() && !tools.isArray()) {
            throw new IllegalArgumentException("'tools' must be an array, not " + tools.getNodeType());
        }
        Map<String, JsonNode> args = new LinkedHashMap<>();
        line.properties().forEach(e -> {
            if (!NOT_ARGUMENTS.contains(e.getKey())) {
                args.put(e.getKey(), e.getValue());
            }
        });
        JsonNode date = line.get("date");
        Clock clock = null;
        if (date != null && !date.isNull()) {
            if (!date.isTextual()) {
                throw new IllegalArgumentException("'date' must be a yyyy-MM-dd string, not " + date);
            }
            clock = fixedDate(date.textValue());
        }
        JsonNode cont = line.get("continue_final_message");
        if (cont != null && !cont.isBoolean()) {
            throw new IllegalArgumentException("'continue_final_message' must be true or false, not " + cont);
        }
        return new ChatRequest((ArrayNode) messages, agp != null && agp.booleanValue(),
                tools == null || tools.isNull() ? null : (ArrayNode) tools, args, clock, cont != null && cont.booleanValue());
    }
}
