package io.moe4j;

/**
 * An error a user can act on. The message is one line that names the file, tensor or option at fault;
 * the CLI prints it as-is, without a stack trace.
 */
public class MoeException extends RuntimeException {
    public MoeException(String message) {
        super(message);
    }

    public MoeException(String message, Throwable cause) {
        super(message, cause);
    }
}
