package io.moe4j.text.chat;

import io.moe4j.MoeException;

import java.util.List;
import java.util.Map;

/**
 * transformers' {@code continue_final_message}: the final message's content gets a marker appended, the template
 * renders, and the text is cut where the marker stands, so it ends inside the final message (a prefilled answer
 * the model goes on with) instead of after the template's end of turn.
 */
final class FinalMessageContinuation {
    private static final String TAG = "CONTINUE_FINAL_MESSAGE_TAG ";

    private FinalMessageContinuation() {
    }

    @SuppressWarnings("unchecked")
    static String render(ChatTemplate template, ChatRequest request) {
        if (request.addGenerationPrompt()) {
            throw new IllegalArgumentException("continue_final_message and add_generation_prompt are not compatible:"
                    + " the first continues the final message, the second opens a new one");
        }
        List<Object> messages = (List<Object>) JsonValues.toTemplateValue(request.messages());
        if (messages.isEmpty() || !(messages.get(messages.size() - 1) instanceof Map<?, ?>)) {
            throw new IllegalArgumentException("continue_final_message is set but there is no final message");
        }
        Map<String, Object> last = (Map<String, Object>) messages.get(messages.size() - 1);
        if (!template.source(request).contains("content")) {
            throw new IllegalArgumentException("continue_final_message is set but the chat template never reads 'content'");
        }
        String finalText = markFinalText(last);
        String rendered = template.render(request, messages);
        String tag = TAG.strip();
        if (!rendered.contains(finalText.strip()) || !rendered.contains(tag)) {
            throw new MoeException("continue_final_message is set but the final message does not appear in the text"
                    + " the chat template rendered (the template drops or changes part of it)");
        }
        int at = rendered.lastIndexOf(tag);
        return rendered.startsWith(TAG, at) ? rendered.substring(0, at) : rendered.substring(0, at).stripTrailing();
    }

    /** Appends the marker to the content (the last text block of a list content); returns the text before it. */
    @SuppressWarnings("unchecked")
    private static String markFinalText(Map<String, Object> last) {
        Object content = last.get("content");
        if (content instanceof String s) {
            last.put("content", s + TAG);
            return s;
        }
        if (content instanceof List<?> blocks) {
            for (int i = blocks.size() - 1; i >= 0; i--) {
                if (blocks.get(i) instanceof Map<?, ?> b && b.get("text") instanceof String text) {
                    ((Map<String, Object>) b).put("text", text + TAG);
                    return text;
                }
            }
            throw new IllegalArgumentException("continue_final_message is set but the final message has no text block");
        }
        throw new IllegalArgumentException("continue_final_message is set but the final message has no \"content\" to continue");
    }
}
