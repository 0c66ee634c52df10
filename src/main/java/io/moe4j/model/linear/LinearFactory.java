package io.moe4j.model.linear;

/**
 * Loads the linears of one checkpoint on one backend, in the format the checkpoint's quantization config gives each
 * module (or unquantized where the config excludes it).
 */
public interface LinearFactory extends AutoCloseable {

    /**
     * The linear named {@code module}, e.g. {@code "model.layers.0.self_attn.q_proj"}: its tensors are
     * {@code module + ".weight"} and the scheme's companions ({@code .weight_scale}, {@code .input_scale},
     * {@code .bias} when {@code bias} ...). Fails with a message naming the tensor when one is missing or mis-shaped.
     */
    Linear load(String module, int inFeatures, int outFeatures, boolean bias);

    @Override
    default void close() {
    }
}
