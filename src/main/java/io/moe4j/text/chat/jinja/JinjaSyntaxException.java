package io.moe4j.text.chat.jinja;

import io.moe4j.MoeException;

/** A template that does not lex or parse; the message names the template and the line. */
public final class JinjaSyntaxException extends MoeException {
    private static final long serialVersionUID = 1L;

    private final int line;

    JinjaSyntaxException(String templateName, int line, String what) {
        super("template " + templateName + " line " + line + ": " + what);
        this.line = line;
    }

    public int line() {
        return line;
    }
}
