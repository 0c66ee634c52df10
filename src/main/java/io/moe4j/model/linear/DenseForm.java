package io.moe4j.model.linear;

/**
 * A linear as float32 numbers: its weight dequantized to rows [out · in] and the rule its forward applies to each
 * input row first, so that {@code input(x) · weightᵀ} computed from these is what {@link Linear#forward} computes,
 * up to the order of the sums. For products a backend's kernels do not offer, such as MLA's kv_b_proj taken into the
 * query and the output at decode. No weight is subnormal, and the input rule leaves no subnormal either.
 *
 * @param weight row-major [outFeatures · inFeatures]
 */
public record DenseForm(int inFeatures, int outFeatures, float[] weight, InputRule input) {

    public DenseForm {
        if (weight.length != (long) inFeatures * outFeatures) {
            throw new IllegalArgumentException("a dense form of [" + outFeatures + ", " + inFeatures + "] needs "
                    + (long) inFeatures * outFeatures + " weights, got " + weight.length);
        }
    }

    /** What a linear does to one input row before multiplying: the scheme's quantize-dequantize, in place. */
    @FunctionalInterface
    public interface InputRule {
        InputRule IDENTITY = (x, off, len) -> {
        };

        void apply(float[] x, int off, int len);
    }
}
