package io.moe4j.serve;

/** Why a sequence ended; {@link #apiName()} is what OpenAI's {@code finish_reason} says. */
public enum FinishReason {
    /** An eos id or a stop string. */
    STOP("stop"),
    /** max_tokens, or the context is full. */
    LENGTH("length"),
    /** The client went away, or the server shut down before the sequence finished. */
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
