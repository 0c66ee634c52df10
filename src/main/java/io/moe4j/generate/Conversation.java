package io.moe4j.generate;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.model.Session;
import io.moe4j.text.chat.ChatRequest;

import java.util.Arrays;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A multi-turn chat on one session. Each turn renders the whole conversation with the model's chat template and
 * feeds only what the KV cache does not hold yet: the longest prefix shared with the tokens already fed is kept
 * (rewinding past what differs, e.g. where a template drops earlier reasoning), and the rest runs as one prompt.
 * Not thread-safe.
 */
public final class Conversation implements AutoCloseable {
    private final MoeModel model;
    private final Session session;
    private final ArrayNode messages = JsonNodeFactory.instance.arrayNode();
    private int[] fed = new int[0];
    private int reusedLastTurn;
    /**
     * The longest rewind a turn prepares for: a reply and {@link #REWIND_TAIL}. A sliding-window layer keeps that
     * many rows beyond its window (gpt-oss-20b: 48 KB a position over its 12 sliding layers, 400 MB at this length).
     */
    static final int REWIND_TOKENS = 8192;
    /** Tokens around a reply that a template may render differently in the next turn (its header, its end). */
    static final int REWIND_TAIL = 64;

    Conversation(MoeModel model) {
        this.model = model;
        this.session = model.model().newSession();
    }

    /** Adds a system message (before the first turn). */
    public Conversation system(String content) {
        messages.add(message("system", content));
        return this;
    }

    /**
     * The user's turn and the model's answer to it, streamed to {@code onText}; the answer joins the history. A turn
     * that fails (a prompt beyond the context, say) leaves the history as it was, so the conversation can go on.
     */
    public GenerationResult say(String user, GenerationRequest request, Consumer<String> onText,
                                BooleanSupplier cancelled) {
        return say(user, request, (text, specialEnds) -> onText.accept(text), cancelled);
    }

    /** {@link #say(String, GenerationRequest, Consumer, BooleanSupplier)}, with where special tokens' texts end. */
    public GenerationResult say(String user, GenerationRequest request, Generator.ReplySink onText,
                                BooleanSupplier cancelled) {
        messages.add(message("user", user));
        int[] prompt = null;
        int keep = 0;
        try {
            ChatRequest chat = ChatRequest.of(messages.deepCopy(), true);
            prompt = model.encodeChat(chat);
            keep = sharedPrefix(fed, prompt);
            if (keep == prompt.length) {
                keep--;   // at least one token must run to get the next logits
            }
            if (keep < session.position() && !session.rewind(keep)) {
                session.reset();
                keep = 0;
            }
            reusedLastTurn = keep;
            // A template may render this reply anew in the next turn (gpt-oss drops its analysis, Qwen3 its
            // thinking): that turn then rewinds to where the reply began, which a sliding-window layer can only do
            // if it kept the rows a query there sees. Kept for replies of up to REWIND_TOKENS; a longer one makes
            // the next turn start over.
            session.keepForRewind((int) Math.min(REWIND_TOKENS, request.maxTokens() + (long) REWIND_TAIL));
            int[] rest = Arrays.copyOfRange(prompt, keep, prompt.length);
            GenerationResult result = new Generator(model.tokenizer()).generate(session, rest, request, onText,
                    cancelled, null, prompt);
            // The session now holds the prompt and every generated token but the last (which was never fed back).
            int[] generated = result.tokens();
            int fedGenerated = (int) (session.position() - prompt.length);
            fed = concat(prompt, Arrays.copyOf(generated, Math.max(0, fedGenerated)));
            messages.add(message("assistant", result.text()));
            return result;
        } catch (RuntimeException e) {
            messages.remove(messages.size() - 1);
            // What the session holds is still known where nothing of this turn was fed; else it starts over.
            if (prompt != null && session.position() <= keep) {
                fed = Arrays.copyOf(prompt, (int) session.position());
            } else if (prompt != null) {
                session.reset();
                fed = new int[0];
            }
            throw e;
        }
    }

    /** How many prompt tokens of the last turn came from the cache instead of running again. */
    public int reusedLastTurn() {
        return reusedLastTurn;
    }

    public ArrayNode messages() {
        return messages.deepCopy();
    }

    private static ObjectNode message(String role, String content) {
        ObjectNode m = JsonNodeFactory.instance.objectNode();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    /**
     * How many tokens two sequences share from their start: what a KV cache holding {@code a} can keep for
     * {@code b} (a conversation's next turn here, a kept sequence in the server's prefix cache).
     */
    public static int sharedPrefix(int[] a, int[] b) {
        int n = Math.min(a.length, b.length);
        int i = 0;
        while (i < n && a[i] == b[i]) {
            i++;
        }
        return i;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Override
    public void close() {
        session.close();
    }
}
