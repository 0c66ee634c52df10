package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.generate.TokenLogprobs;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.IntFunction;

/**
 * A reply's tokens' log-probabilities in OpenAI's shapes: for chat {@code {"content": [{"token", "logprob", "bytes",
 * "top_logprobs": [...]}], "refusal": null}}, for completions the older {@code {"tokens", "token_logprobs",
 * "top_logprobs", "text_offset"}}. A token's text is its bytes read as UTF-8 (a byte-level token holding part of a
 * character reads as U+FFFD; {@code bytes} has it exactly). The completions' offsets count characters (code points,
 * as Python clients index a string, not Java's UTF-16 units) and run on over the pieces of one reply, so one writer
 * serves one response.
 */
final class LogprobsWriter {
    private final ObjectMapper json;
    private final boolean chat;
    private final IntFunction<byte[]> tokenBytes;
    private int textOffset;

    LogprobsWriter(ObjectMapper json, boolean chat, IntFunction<byte[]> tokenBytes) {
        this.json = json;
        this.chat = chat;
        this.tokenBytes = tokenBytes;
    }

    /** The log-probabilities of these tokens, the next piece of the reply's. */
    JsonNode write(List<TokenLogprobs> tokens) {
        return chat ? chat(tokens) : completion(tokens);
    }

    private JsonNode chat(List<TokenLogprobs> tokens) {
        ObjectNode root = json.createObjectNode();
        ArrayNode content = root.putArray("content");
        for (TokenLogprobs t : tokens) {
            ObjectNode entry = entry(content.addObject(), t.token(), t.logprob());
            ArrayNode top = entry.putArray("top_logprobs");
            for (int i = 0; i < t.topIds().length; i++) {
                entry(top.addObject(), t.topIds()[i], t.topLogprobs()[i]);
            }
        }
        root.putNull("refusal");
        return root;
    }

    private ObjectNode entry(ObjectNode entry, int id, float logprob) {
        byte[] b = tokenBytes.apply(id);
        entry.put("token", new String(b, StandardCharsets.UTF_8));
        entry.put("logprob", logprob);
        ArrayNode bytes = entry.putArray("bytes");
        for (byte x : b) {
            bytes.add(x & 0xFF);
        }
        return entry;
    }

    /**
     * The completions API's echo with log-probabilities: the prompt's tokens, then the reply's. The prompt's first
     * token has nothing before it to be scored by, so its log-probability and top tokens are null (as OpenAI wrote
     * them); {@code prompt} scores the others, in order.
     */
    JsonNode writeEcho(int firstPromptToken, List<TokenLogprobs> prompt, List<TokenLogprobs> reply) {
        if (chat) {
            throw new IllegalStateException("echo is a completions field");
        }
        ObjectNode root = completionRoot();
        String text = text(firstPromptToken);
        ((ArrayNode) root.get("tokens")).add(text);
        ((ArrayNode) root.get("token_logprobs")).addNull();
        ((ArrayNode) root.get("top_logprobs")).addNull();
        ((ArrayNode) root.get("text_offset")).add(textOffset);
        textOffset += text.codePointCount(0, text.length());
        appendCompletion(root, prompt);
        appendCompletion(root, reply);
        return root;
    }

    /**
     * vLLM's {@code prompt_logprobs}: null for the prompt's first token, then for each other token an object keyed by
     * token id holding that token and the most likely ones, each {@code {"logprob", "rank", "decoded_token"}}.
     */
    ArrayNode promptLogprobs(List<TokenLogprobs> scored) {
        ArrayNode list = json.createArrayNode();
        list.addNull();
        for (TokenLogprobs t : scored) {
            ObjectNode position = list.addObject();
            position.set(Integer.toString(t.token()), json.createObjectNode().put("logprob", t.logprob())
                    .put("rank", t.rank()).put("decoded_token", text(t.token())));
            for (int i = 0; i < t.topIds().length; i++) {
                String id = Integer.toString(t.topIds()[i]);
                if (!position.has(id)) {
                    position.set(id, json.createObjectNode().put("logprob", t.topLogprobs()[i]).put("rank", i + 1)
                            .put("decoded_token", text(t.topIds()[i])));
                }
            }
        }
        return list;
    }

    private JsonNode completion(List<TokenLogprobs> tokens) {
        ObjectNode root = completionRoot();
        appendCompletion(root, tokens);
        return root;
    }

    private ObjectNode completionRoot() {
        ObjectNode root = json.createObjectNode();
        root.putArray("tokens");
        root.putArray("token_logprobs");
        root.putArray("top_logprobs");
        root.putArray("text_offset");
        return root;
    }

    private void appendCompletion(ObjectNode root, List<TokenLogprobs> tokens) {
        ArrayNode texts = (ArrayNode) root.get("tokens");
        ArrayNode values = (ArrayNode) root.get("token_logprobs");
        ArrayNode tops = (ArrayNode) root.get("top_logprobs");
        ArrayNode offsets = (ArrayNode) root.get("text_offset");
        for (TokenLogprobs t : tokens) {
            String text = text(t.token());
            texts.add(text);
            values.add(t.logprob());
            ObjectNode top = tops.addObject();
            boolean listed = false;
            for (int i = 0; i < t.topIds().length; i++) {
                top.put(text(t.topIds()[i]), t.topLogprobs()[i]);
                listed |= t.topIds()[i] == t.token();
            }
            // the legacy API always lists the token itself too: up to logprobs + 1 entries, as OpenAI and vLLM send
            if (!listed && !top.has(text)) {
                top.put(text, t.logprob());
            }
            offsets.add(textOffset);
            textOffset += text.codePointCount(0, text.length());
        }
    }

    private String text(int id) {
        return new String(tokenBytes.apply(id), StandardCharsets.UTF_8);
    }
}
