package io.moe4j.quant;

/**
 * What an MoE layer's experts are quantized as, for the oracle, logs and errors.
 *
 * @param name      the producer's name of the scheme, e.g. {@code quark w_mxfp4_a_fp8} or {@code compressed-tensors W4A16}
 * @param weights   the weight format
 * @param activations the activation quantization it implies
 * @param actOrder  INT weights with an act-order column permutation (g_idx)
 */
public record QuantScheme(String name, WeightFormat weights, ActivationFormat activations, boolean actOrder) {

    public static QuantScheme unquantized(WeightFormat w) {
        return new QuantScheme(w.name().toLowerCase(java.util.Locale.ROOT), w, ActivationFormat.NONE, false);
    }

    @Override
    public String toString() {
        return name + " (weights " + weights + ", activations " + activations + (actOrder ? ", act-order" : "") + ")";
    }
}
