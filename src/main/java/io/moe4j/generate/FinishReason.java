package io.moe4j.generate;

/** Why a generation ended, in the words of the OpenAI API ({@code finish_reason}, vLLM's {@code abort}). */
public enum FinishReason {
    /** An end-of-sequence token or a stop string. */
    STOP("stop"),
    /** The token budget or the context ran out. */
    LENGTH("length"),
    /** The caller cancelled it: Ctrl-C, a client that went away, a server shutting down. */
    CANCELLED("abort"),
    /** The model failed on this sequence's step. */
    ERROR("error");

    private final String apiName;

    FinishReason(String apiName) {
        this.apiName = apiName;
    }

    public String apiName() {
        return apiName;
    }
}
