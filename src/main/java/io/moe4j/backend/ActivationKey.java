package io.moe4j.backend;

import io.moe4j.MoeException;
import io.moe4j.quant.ActivationFormat;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The precision the experts' GEMMs take their activations in, as the oracle matches them: the seed's activation
 * {@code QuantKey}, coarsened to what a user can ask for ({@code bf16}, {@code fp8}, {@code mxfp8} ...).
 *
 * <p>A checkpoint's {@link ActivationFormat} maps onto one key ({@code NONE} is {@link #BF16}: activations stay in
 * float). A weight-only checkpoint may be run with quantized activations when a backend offers that variant (the
 * seed's {@code FLASHINFER_TRTLLM_MXFP4_MXFP8}); a checkpoint that declares its activations may not be changed.
 */
public enum ActivationKey {
    /** Activations stay in float (bf16 on a GPU, float32 in Java): the weight-only schemes. */
    BF16,
    FP8,
    /** OCP MXFP8 (E4M3 elements, E8M0 scale per 32), dynamic: the seed's {@code kMxfp8Dynamic}. */
    MXFP8,
    MXFP4,
    MXFP6_E3M2,
    MXFP6_E2M3,
    NVFP4,
    INT8;

    /** The user's spelling: {@code bf16}, {@code fp8}, {@code mxfp6_e3m2} ... */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    @Override
    public String toString() {
        return label();
    }

    /** The key of a checkpoint's activation quantization ({@code NONE} → {@link #BF16}). */
    public static ActivationKey of(ActivationFormat format) {
        return switch (format) {
            case NONE -> BF16;
            case MXFP4 -> MXFP4;
            case MXFP6_E3M2 -> MXFP6_E3M2;
            case MXFP6_E2M3 -> MXFP6_E2M3;
            case NVFP4 -> NVFP4;
            case FP8_STATIC, FP8_TOKEN, FP8_GROUP128 -> FP8;
            case INT8_STATIC, INT8_TOKEN -> INT8;
        };
    }

    /**
     * The activation format that computes this key on a weight-only checkpoint, where there are no static input
     * scales: the dynamic form. Empty for {@link #NVFP4} (needs a checkpoint's input global scale) and for
     * {@link #MXFP8} ({@link ActivationFormat} has no MXFP8 yet).
     */
    public Optional<ActivationFormat> dynamicFormat() {
        return switch (this) {
            case BF16 -> Optional.of(ActivationFormat.NONE);
            case FP8 -> Optional.of(ActivationFormat.FP8_GROUP128);
            case MXFP4 -> Optional.of(ActivationFormat.MXFP4);
            case MXFP6_E3M2 -> Optional.of(ActivationFormat.MXFP6_E3M2);
            case MXFP6_E2M3 -> Optional.of(ActivationFormat.MXFP6_E2M3);
            case INT8 -> Optional.of(ActivationFormat.INT8_TOKEN);
            case MXFP8, NVFP4 -> Optional.empty();
        };
    }

    /**
     * Parses a user's value ({@code bf16}, {@code fp8}, {@code mxfp8}, ...; case-insensitive).
     *
     * @param where what set it, for the message (e.g. {@code MOE4J_MOE_ACTIVATION})
     */
    public static ActivationKey parse(String value, String where) {
        String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        for (ActivationKey k : values()) {
            if (k.label().equals(v)) {
                return k;
            }
        }
        throw new MoeException(where + "=" + value + ": unknown MoE activation; choose one of "
                + Arrays.stream(values()).map(ActivationKey::label).collect(Collectors.joining(", ")));
    }
}
