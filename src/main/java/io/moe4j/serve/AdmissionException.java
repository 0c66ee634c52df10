package io.moe4j.serve;

import io.moe4j.MoeException;

/** The scheduler did not take a request: its queue is full, or it is shutting down. */
public final class AdmissionException extends MoeException {
    private final boolean queueFull;

    public AdmissionException(String message, boolean queueFull) {
        super(message);
        this.queueFull = queueFull;
    }

    /** True when the queue was full (retry later); false when the scheduler is shutting down. */
    public boolean queueFull() {
        return queueFull;
    }
}
