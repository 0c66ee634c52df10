package io.moe4j.serve;

/**
 * What the server serves: a model that steps sequences, the text side that goes with it, and the name clients ask
 * for in {@code "model"}.
 */
public record ServedModel(String id, StepModel model, TextCodec text) {
    public ServedModel {
        if (id == null || id.isBlank()) {
            throw new IllegalArgumentException("a served model needs a non-empty id");
        }
    }
}
