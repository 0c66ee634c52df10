package io.moe4j.backend;

import java.util.Locale;

/**
 * The precision the kernels multiply a weight-only layer's activations in, as opposed to {@link ActivationKey},
 * which says how the activations are quantize-dequantized before any kernel sees them. {@link #FLOAT} (the default)
 * keeps them in float32 and gives the exact reference's sums; {@link #INT8} rounds them to signed bytes in blocks of
 * 32 columns with one float scale a block (llama.cpp's Q8_0: d = max|x|/127, q = round(x/d)) and multiplies them
 * with the integer weight codes in integer arithmetic, trading a bounded error for fewer operations a weight.
 */
public enum KernelActivations {
    FLOAT,
    INT8;

    /** The user's spelling: {@code float} or {@code int8}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    @Override
    public String toString() {
        return label();
    }

    /**
     * Parses a user's value ({@code float} or {@code int8}, case-insensitive; null or blank is {@link #FLOAT}).
     *
     * @param where what set it, for the message (e.g. {@code --activations})
     */
    public static KernelActivations parse(String value, String where) {
        if (value == null || value.isBlank()) {
            return FLOAT;
        }
        String v = value.trim().toLowerCase(Locale.ROOT);
        for (KernelActivations k : values()) {
            if (k.label().equals(v)) {
                return k;
            }
        }
        throw new IllegalArgumentException(where + " " + value + ": expected float or int8");
    }
}
