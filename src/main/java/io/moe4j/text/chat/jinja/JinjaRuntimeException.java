package io.moe4j.text.chat.jinja;

/** An error while rendering; the renderer adds the template name and line before it reaches the caller. */
final class JinjaRuntimeException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    JinjaRuntimeException(String message) {
        super(message, null, false, false);
    }
}
