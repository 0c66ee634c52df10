package io.moe4j.quant;

/** The activation side of a scheme: how expert inputs are quantized before each GEMM. */
public enum ActivationFormat {
    /** Activations stay in float (weight-only schemes). */
    NONE,
    MXFP4, MXFP6_E3M2, MXFP6_E2M3,
    NVFP4,
    FP8_STATIC, FP8_TOKEN, FP8_GROUP128,
    INT8_STATIC, INT8_TOKEN;

    public boolean dynamic() {
        return this != FP8_STATIC && this != INT8_STATIC && this != NONE;
    }
}
