package io.moe4j.backend.cuda;

/**
 * The packed formats of the CUDA-core grouped GEMV ({@link RowGemv}), a reference and benchmark beside the engine's
 * kernels. Each names its host layout (what {@link RowStack} holds, the checkpoint's own) and the kernel that reads
 * it.
 */
enum RowFormat {
    /** OCP MXFP4: E2M1 codes two a byte (even element low), one E8M0 scale byte per 32 along K. */
    MXFP4(32, "gemv_mxfp4.cu", "moe_gemv_mxfp4"),
    /** bfloat16, no scales. */
    BF16(8, "gemv_bf16.cu", "moe_gemv_bf16"),
    /** FP8 E4M3FN bytes with one float32 scale per output row. */
    FP8_E4M3(16, "gemv_fp8.cu", "moe_gemv_fp8"),
    /** Signed INT4 stored offset by 8, two a byte (even element low), one bf16 scale per group of K. */
    INT4(32, "gemv_int4.cu", "moe_gemv_int4");

    private final int elementsPerChunk;
    private final String kernelFile;
    private final String kernelName;

    RowFormat(int elementsPerChunk, String kernelFile, String kernelName) {
        this.elementsPerChunk = elementsPerChunk;
        this.kernelFile = kernelFile;
        this.kernelName = kernelName;
    }

    /** Elements in one 16-byte load of the kernel; device rows are padded to a whole number of these. */
    int elementsPerChunk() {
        return elementsPerChunk;
    }

    String kernelFile() {
        return kernelFile;
    }

    String kernelName() {
        return kernelName;
    }

    /** Bytes of packed codes in one row of {@code cols} elements, as the checkpoint stores them. */
    long codeBytesPerRow(int cols) {
        return switch (this) {
            case MXFP4, INT4 -> cols / 2;
            case BF16 -> 2L * cols;
            case FP8_E4M3 -> cols;
        };
    }

    /** Bytes of scales for one row of {@code cols} elements with scale groups of {@code group}. */
    long scaleBytesPerRow(int cols, int group) {
        return switch (this) {
            case MXFP4 -> cols / 32;
            case INT4 -> 2L * (cols / group);
            case BF16 -> 0;
            case FP8_E4M3 -> 4;
        };
    }
}
