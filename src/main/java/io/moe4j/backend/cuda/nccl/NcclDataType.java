package io.moe4j.backend.cuda.nccl;

/** NCCL's element types ({@code ncclDataType_t}; the values are nccl.h's), with their size in bytes. */
public enum NcclDataType {
    INT8(0, 1),
    UINT8(1, 1),
    INT32(2, 4),
    UINT32(3, 4),
    INT64(4, 8),
    UINT64(5, 8),
    FLOAT16(6, 2),
    FLOAT32(7, 4),
    FLOAT64(8, 8),
    BFLOAT16(9, 2),
    /** NCCL 2.24 and later. */
    FLOAT8_E4M3(10, 1),
    /** NCCL 2.24 and later. */
    FLOAT8_E5M2(11, 1);

    private final int code;
    private final int bytes;

    NcclDataType(int code, int bytes) {
        this.code = code;
        this.bytes = bytes;
    }

    /** The {@code ncclDataType_t} value. */
    public int code() {
        return code;
    }

    public int bytes() {
        return bytes;
    }
}
