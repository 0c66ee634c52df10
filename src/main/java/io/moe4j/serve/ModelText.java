package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import io.moe4j.generate.ChatOutputs;
import io.moe4j.generate.MoeModel;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.text.chat.ChatRequest;
import io.moe4j.text.tokenizer.IncrementalDecoder;

/**
 * The text side of a loaded model for the server: its chat template renders the request's messages, tools and
 * template arguments, its tokenizer encodes and decodes. Thread-safe: the template and tokenizer are.
 */
public final class ModelText implements TextCodec {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final MoeModel model;
    private final int[] eos;

    public ModelText(MoeModel model) {
        this.model = model;
        this.eos = model.eosIds().stream().mapToInt(Integer::intValue).sorted().toArray();
    }

    @Override
    public int[] renderChat(ChatPrompt prompt) {
        return model.tokenizer().encode(renderChatText(prompt));
    }

    @Override
    public String renderChatText(ChatPrompt prompt) {
        ArrayNode messages = JsonNodeFactory.instance.arrayNode();
        for (ChatMessage m : prompt.messages()) {
            ObjectNode copy = m.raw() != null && m.raw().isObject() ? (ObjectNode) m.raw().deepCopy()
                    : JsonNodeFactory.instance.objectNode().put("role", m.role());
            // Content parts arrive joined into one text: templates expect a string.
            if (m.content() != null) {
                copy.put("content", m.content());
            } else if (m.role().equals("assistant")) {
                // a turn that only calls tools: templates test and search the content, so it is empty, not None
                copy.put("content", "");
            }
            // Qwen3's template reads the reasoning as reasoning_content, gpt-oss's as thinking
            if (m.role().equals("assistant") && copy.path("reasoning_content").isTextual() && !copy.has("thinking")) {
                copy.put("thinking", copy.get("reasoning_content").asText());
            }
            argumentsAsObjects(copy);
            messages.add(copy);
        }
        ArrayNode tools = prompt.tools() instanceof ArrayNode a && !a.isEmpty() ? a : null;
        ChatRequest request = new ChatRequest(messages, true, tools, prompt.templateArgs(), null);
        if (model.chatTemplate().isEmpty()) {
            throw new IllegalArgumentException(model.directory() + ": the model ships no chat template");
        }
        try {
            return model.chatTemplate().get().renderWithOptionalToolFields(request);
        } catch (MoeException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /**
     * OpenAI sends a call's arguments as a JSON string; templates write them with {@code tojson} (gpt-oss) or as
     * they are when a string (Qwen3), so they get the parsed object, which both write as the JSON it is.
     */
    private static void argumentsAsObjects(ObjectNode message) {
        if (!message.path("tool_calls").isArray()) {
            return;
        }
        for (JsonNode call : message.get("tool_calls")) {
            JsonNode function = call.path("function");
            if (function instanceof ObjectNode f && f.path("arguments").isTextual()) {
                try {
                    JsonNode parsed = JSON.readTree(f.get("arguments").asText());
                    if (parsed != null && parsed.isObject()) {
                        f.set("arguments", parsed);
                    }
                } catch (java.io.IOException e) {
                    // not JSON: the template gets the string as sent
                }
            }
        }
    }

    @Override
    public ChatOutputs chatOutputs() {
        return model.chatOutputs();
    }

    @Override
    public int[] encode(String prompt) {
        return model.tokenizer().encodePrompt(prompt);
    }

    @Override
    public int[] encodeChatText(String text) {
        return model.tokenizer().encode(text);
    }

    @Override
    public int[] eosIds() {
        return eos.clone();
    }

    @Override
    public byte[] tokenBytes(int id) {
        byte[] b = model.tokenizer().tokenBytes(id);
        return b != null ? b : TextCodec.super.tokenBytes(id);
    }

    @Override
    public boolean isSpecialToken(int id) {
        return model.tokenizer().isSpecial(id);
    }

    @Override
    public Detokenizer detokenizer() {
        return detokenizer(false);
    }

    @Override
    public Detokenizer detokenizer(boolean skipSpecialTokens) {
        IncrementalDecoder decoder = model.tokenizer().incrementalDecoder(skipSpecialTokens);
        return new Detokenizer() {
            @Override
            public String accept(int id) {
                return decoder.next(id);
            }

            @Override
            public String flush() {
                return decoder.flush();
            }
        };
    }
}
