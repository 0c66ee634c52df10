package io.moe4j.quant;

import io.moe4j.safetensors.Checkpoint;

import java.lang.foreign.Arena;

/**
 * How one dense linear module (an attention projection, a dense MLP projection, {@code lm_head}) is stored and how
 * its input is quantized: the per-module counterpart of {@link QuantMethod}. A quantization config gives one for any
 * module name ({@code QuantizationConfig.linearMethod}); the method validates its scheme when constructed.
 */
public interface LinearMethod {

    /** The scheme the config gives the module (for an unquantized module, the declared dtype; the tensor decides). */
    QuantScheme scheme();

    /** Whether the module's weight is stored quantized (false for bf16 / f16 / f32 weights). */
    default boolean quantized() {
        return !scheme().weights().unquantized();
    }

    /**
     * Loads the weight [outFeatures, inFeatures] of {@code module} (tensor {@code module + ".weight"} or
     * {@code ".weight_packed"} and the scheme's companions) as a one-expert matrix, with the input quantization the
     * scheme implies. Codes stay packed and, where the checkpoint's layout is the canonical one, mapped (no copy);
     * anything converted lives in {@code arena}. Fails with a message naming the tensor when one is missing or
     * mis-shaped.
     */
    LinearWeights load(Checkpoint checkpoint, String module, int outFeatures, int inFeatures,
                       Arena arena);
}
