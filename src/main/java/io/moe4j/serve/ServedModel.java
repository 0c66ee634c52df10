package io.moe4j.serve;

/**
 * What the server serves: a model that steps sequences, the text side that goes with it, the name clients ask for
 * in {@code "model"}, and the sampling a request gets for the fields it leaves out.
 */
public record ServedModel(String id, StepModel model, TextCodec text, SamplingDefaults sampling) {
    public ServedModel {
        if (id == null || id.isBlank()) {
            throw new IllegalArgumentException("a served model needs a non-empty id");
        }
        if (sampling == null) {
            throw new IllegalArgumentException("a served model needs its sampling defaults");
        }
    }

    /** A model with OpenAI's sampling defaults. */
    public ServedModel(String id, StepModel model, TextCodec text) {
        this(id, model, text, SamplingDefaults.OPENAI);
    }
}
