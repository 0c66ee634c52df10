package io.moe4j.quant;

/** The weight side of a scheme: what the experts' matrices are stored as. The oracle decides on this. */
public enum WeightFormat {
    BF16, F16, F32,
    FP8_TENSOR, FP8_CHANNEL, FP8_BLOCK,
    MXFP4, MXFP6_E3M2, MXFP6_E2M3,
    NVFP4,
    INT8_TENSOR, INT8_CHANNEL, INT8_GROUP,
    INT4_CHANNEL, INT4_GROUP;

    public boolean unquantized() {
        return this == BF16 || this == F16 || this == F32;
    }

    public boolean mx() {
        return this == MXFP4 || this == MXFP6_E3M2 || this == MXFP6_E2M3;
    }
}
