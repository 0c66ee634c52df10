package io.moe4j.serve;

import io.moe4j.generate.FinishReason;

/** A submitted request's handle. */
public interface Ticket {
    /**
     * Asks the scheduler to drop the request: a waiting one leaves the queue at once, a running one at the next step
     * boundary. Its listener then gets {@link FinishReason#CANCELLED} (unless it finished first). Idempotent.
     */
    void cancel();
}
