package io.moe4j.serve;

import io.moe4j.generate.ChatOutputs;

/**
 * The text side of a served model: prompts to token ids, and generated ids back to text. Implementations must be
 * safe to call from many request threads at once (rendering and encoding happen on the HTTP threads); a
 * {@link Detokenizer} belongs to one sequence and is used by one thread at a time.
 */
public interface TextCodec {

    /** The chat template applied to the conversation, ready for the assistant's answer, as token ids. */
    int[] renderChat(ChatPrompt prompt);

    /**
     * The chat template applied to the conversation as text (what {@link #renderChat} encodes), or null when the
     * codec cannot say: replies are then not split into reasoning, answer and tool calls.
     */
    default String renderChatText(ChatPrompt prompt) {
        return null;
    }

    /** Reply formats, tool calls and constrained decoding for this model; null when it offers none. */
    default ChatOutputs chatOutputs() {
        return null;
    }

    /** A plain-text prompt as token ids (with whatever prefix, such as BOS, the model expects). */
    int[] encode(String prompt);

    /** {@link #renderChatText}'s text as token ids: the template wrote its own markers, so nothing is added. */
    default int[] encodeChatText(String text) {
        return encode(text);
    }

    /** Token ids that end generation (end of sequence, end of turn); they are never shown as text. */
    int[] eosIds();

    /**
     * The bytes token {@code id} stands for in text (a byte-level token may hold part of a character), as
     * log-probabilities report each token. By default: the token decoded alone.
     */
    default byte[] tokenBytes(int id) {
        Detokenizer d = detokenizer(false);
        return (d.accept(id) + d.flush()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * Whether {@code id} is one of the model's special tokens (its markup: chat and channel markers, end of text),
     * as opposed to ordinary text that may spell the same characters. A reply's reader trusts only these as markup.
     */
    default boolean isSpecialToken(int id) {
        return false;
    }

    /** A fresh incremental detokenizer for one sequence. */
    Detokenizer detokenizer();

    /** {@link #detokenizer()}, special tokens left out of the text when {@code skipSpecialTokens}. */
    default Detokenizer detokenizer(boolean skipSpecialTokens) {
        return detokenizer();
    }

    /**
     * Turns generated ids into text one at a time. Text that is not complete yet (a partial UTF-8 character, a byte
     * token of a longer sequence) is held back until a later id completes it.
     */
    interface Detokenizer {
        /** The new text this id completes (often the id's own text; possibly empty). */
        String accept(int id);

        /** What is still held back when the sequence ends (incomplete bytes become U+FFFD). */
        String flush();
    }
}
