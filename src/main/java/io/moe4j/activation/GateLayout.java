package io.moe4j.activation;

/** How the rows of w13 split into the gate and up projections of a gated activation. */
public enum GateLayout {
    /** Rows [0, I) are the gate, rows [I, 2I) the up projection (vLLM's fused w13; Mixtral, Qwen3, DeepSeek, Llama-4). */
    CONCATENATED,
    /** Even rows are the gate, odd rows the up projection (gpt-oss's gate_up_proj, kept as the checkpoint has it). */
    INTERLEAVED,
    /** Not gated: w13 holds I rows that feed the activation directly. */
    NONE
}
