package io.moe4j.activation;

/**
 * The expert's activation between GEMM1 and GEMM2. Gated kinds combine a gate value g and an up value u;
 * the plain kinds apply to one value.
 */
public enum Activation {
    /** silu(g) · u (Mixtral, Qwen3, DeepSeek-V3, Llama-4). */
    SILU_AND_MUL,
    /** gpt-oss: g = min(g, limit), u = clamp(u, ±limit), g · sigmoid(alpha · g) · (u + 1). */
    SWIGLU_OAI,
    /** gelu(g) · u with the exact erf GELU. */
    GELU_AND_MUL,
    /** gelu_tanh(g) · u. */
    GELU_TANH_AND_MUL,
    /** relu(g)² · u. */
    RELU2_AND_MUL,
    SILU,
    GELU,
    GELU_TANH,
    RELU2;

    public static final float OAI_ALPHA = 1.702f;
    public static final float OAI_LIMIT = 7.0f;

    public boolean gated() {
        return switch (this) {
            case SILU_AND_MUL, SWIGLU_OAI, GELU_AND_MUL, GELU_TANH_AND_MUL, RELU2_AND_MUL -> true;
            default -> false;
        };
    }

    /**
     * Gated activation of one (gate, up) pair, in double as the reference computes it.
     *
     * @param limit the SwiGLU-OAI clamp limit (ignored by other kinds)
     */
    public double gated(double g, double u, double limit) {
        return switch (this) {
            case SILU_AND_MUL -> silu(g) * u;
            case SWIGLU_OAI -> {
                double gc = Math.min(g, limit);
                double uc = Math.max(-limit, Math.min(u, limit));
                yield gc * sigmoid(OAI_ALPHA * gc) * (uc + 1.0);
            }
            case GELU_AND_MUL -> gelu(g) * u;
            case GELU_TANH_AND_MUL -> geluTanh(g) * u;
            case RELU2_AND_MUL -> relu2(g) * u;
            default -> throw new IllegalStateException(this + " is not gated");
        };
    }

    public double plain(double x) {
        return switch (this) {
            case SILU -> silu(x);
            case GELU -> gelu(x);
            case GELU_TANH -> geluTanh(x);
            case RELU2 -> relu2(x);
            default -> throw new IllegalStateException(this + " is gated");
        };
    }

    static double sigmoid(double x) {
        return 1.0 / (1.0 + Math.exp(-x));
    }

    static double silu(double x) {
        return x * sigmoid(x);
    }

    static double gelu(double x) {
        return 0.5 * x * (1.0 + Erf.erf(x / Math.sqrt(2.0)));
    }

    static double geluTanh(double x) {
        return 0.5 * x * (1.0 + Math.tanh(Math.sqrt(2.0 / Math.PI) * (x + 0.044715 * x * x * x)));
    }

    static double relu2(double x) {
        double r = Math.max(0.0, x);
        return r * r;
    }
}
