package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import io.moe4j.generate.MoeModel;
import io.moe4j.text.chat.ChatRequest;
import io.moe4j.text.tokenizer.IncrementalDecoder;

/**
 * The text side of a loaded model for the server: its chat template renders the request's messages, tools and
 * template arguments, its tokenizer encodes and decodes. Thread-safe: the template and tokenizer are.
 */
public final class ModelText implements TextCodec {
    private final MoeModel model;
    private final int[] eos;

    public ModelText(MoeModel model) {
        this.model = model;
        this.eos = model.eosIds().stream().mapToInt(Integer::intValue).sorted().toArray();
    }

    @Override
    public int[] renderChat(ChatPrompt prompt) {
        ArrayNode messages = JsonNodeFactory.instance.arrayNode();
        for (ChatMessage m : prompt.messages()) {
            ObjectNode copy = m.raw() != null && m.raw().isObject() ? (ObjectNode) m.raw().deepCopy()
                    : JsonNodeFactory.instance.objectNode().put("role", m.role());
            // Content parts arrive joined into one text: templates expect a string.
            if (m.content() != null) {
                copy.put("content", m.content());
            }
            messages.add(copy);
        }
        ArrayNode tools = prompt.tools() instanceof ArrayNode a && !a.isEmpty() ? a : null;
        ChatRequest request = new ChatRequest(messages, true, tools, prompt.templateArgs(), null);
        try {
            return model.encodeChat(request);
        } catch (MoeException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    @Override
    public int[] encode(String prompt) {
        return model.tokenizer().encode(prompt);
    }

    @Override
    public int[] eosIds() {
        return eos.clone();
    }

    @Override
    public Detokenizer detokenizer() {
        IncrementalDecoder decoder = model.tokenizer().incrementalDecoder(false);
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

    /** The JSON of a template argument (for tests and logs). */
    static JsonNode argument(ChatPrompt prompt, String name) {
        return prompt.templateArgs().get(name);
    }
}
