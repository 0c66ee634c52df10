package io.moe4j.text.tools;

import java.util.UUID;

/** Where tool-call ids come from: random ones for a server, a counter for tests that compare output. */
@FunctionalInterface
public interface ToolCallIds {

    String next();

    /** {@code call_} and 24 random hex digits, as OpenAI's ids look. */
    static ToolCallIds random() {
        return () -> "call_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
    }

    /** prefix0, prefix1, ... for one parse or stream. */
    static ToolCallIds sequential(String prefix) {
        int[] next = {0};
        return () -> prefix + next[0]++;
    }
}
