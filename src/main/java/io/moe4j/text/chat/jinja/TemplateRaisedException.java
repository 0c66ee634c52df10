package io.moe4j.text.chat.jinja;

import io.moe4j.MoeException;

/** The template called {@code raise_exception(message)}: it refuses the input (e.g. a misplaced tool message). */
public final class TemplateRaisedException extends MoeException {
    private static final long serialVersionUID = 1L;

    private final String templateMessage;

    TemplateRaisedException(String templateName, int line, String templateMessage) {
        super("template " + templateName + " line " + line + " refused the input: " + templateMessage);
        this.templateMessage = templateMessage;
    }

    /** The message the template passed to {@code raise_exception}. */
    public String templateMessage() {
        return templateMessage;
    }
}
