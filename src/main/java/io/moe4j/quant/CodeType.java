package io.moe4j.quant;

/**
 * How one weight element is stored in an {@link ExpertMatrix}'s code bytes. Rows are contiguous; sub-byte codes
 * are packed as their checkpoints pack them, so weights stay at checkpoint precision.
 */
public enum CodeType {
    /** IEEE float32, little-endian. */
    F32(32),
    BF16(16),
    F16(16),
    FP8_E4M3(8),
    FP8_E5M2(8),
    /** Two E2M1 codes a byte, the even element in the low nibble (OCP MX, NVFP4 and gpt-oss alike). */
    FP4_E2M1(4),
    /** Four 6-bit codes in three bytes, the little-endian word c0 | c1<<6 | c2<<12 | c3<<18. */
    FP6_E3M2(6),
    FP6_E2M3(6),
    /** Signed two's-complement byte. */
    INT8(8),
    /** Two signed two's-complement nibbles a byte, the even element in the low nibble. */
    INT4(4);

    private final int bits;

    CodeType(int bits) {
        this.bits = bits;
    }

    public int bits() {
        return bits;
    }

    /** Bytes one row of {@code cols} codes takes (cols must fill whole bytes). */
    public long rowBytes(long cols) {
        long b = cols * bits;
        if (b % 8 != 0) {
            throw new IllegalArgumentException(cols + " " + this + " codes do not fill whole bytes");
        }
        return b / 8;
    }
}
