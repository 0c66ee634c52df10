package io.moe4j.backend.cuda.nccl;

/** NCCL's built-in reductions ({@code ncclRedOp_t}; the values are nccl.h's). */
public enum NcclReduction {
    SUM(0),
    PROD(1),
    MAX(2),
    MIN(3),
    /** The sum divided by the number of ranks (floating-point types). */
    AVG(4);

    private final int code;

    NcclReduction(int code) {
        this.code = code;
    }

    /** The {@code ncclRedOp_t} value. */
    public int code() {
        return code;
    }
}
