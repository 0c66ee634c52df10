package io.moe4j.model.linear;

import io.moe4j.quant.QuantScheme;

/** A {@link Linear} loaded from a checkpoint: it also says in what scheme the checkpoint stores it. */
public interface LoadedLinear extends Linear {

    /** The scheme of the module's weight and input, e.g. for logs and for counting quantized modules. */
    QuantScheme scheme();

    /** Whether the weight is stored quantized (not bf16 / f16 / f32). */
    default boolean quantized() {
        return !scheme().weights().unquantized();
    }
}
