package io.moe4j.quant;

/** Storage of block scales: kept in checkpoint precision so the kernels stream as few bytes as possible. */
public enum ScaleType {
    /** Power of two 2^(code-127), one byte (OCP MX). */
    E8M0(1),
    /** FP8 E4M3FN, one byte (NVFP4 block scales). */
    E4M3(1),
    F32(4);

    private final int bytes;

    ScaleType(int bytes) {
        this.bytes = bytes;
    }

    public int bytes() {
        return bytes;
    }
}
