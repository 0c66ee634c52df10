package io.moe4j.serve;

/**
 * One prompt of a completions request: text to encode, or token ids as sent (exactly one of the two is not null).
 */
public record CompletionPrompt(String text, int[] ids) {
    public CompletionPrompt {
        if ((text == null) == (ids == null)) {
            throw new IllegalArgumentException("a prompt is text or token ids, exactly one of them");
        }
    }
}
