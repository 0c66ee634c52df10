package io.moe4j.safetensors;

import java.util.Locale;
import java.util.Optional;

/** The element types a safetensors header may name, with their width in bits (sub-byte types included). */
public enum DType {
    BOOL(8), U8(8), I8(8),
    F8_E4M3(8), F8_E5M2(8), F8_E8M0(8),
    I16(16), U16(16), F16(16), BF16(16),
    I32(32), U32(32), F32(32),
    I64(64), U64(64), F64(64), C64(64),
    F4(4), F6_E2M3(6), F6_E3M2(6);

    private final int bits;

    DType(int bits) {
        this.bits = bits;
    }

    public int bits() {
        return bits;
    }

    /** Bytes per element, for byte-aligned types only. */
    public int byteSize() {
        if (bits % 8 != 0) {
            throw new IllegalStateException(this + " is a sub-byte type");
        }
        return bits / 8;
    }

    public boolean isFloatingPoint() {
        return switch (this) {
            case F8_E4M3, F8_E5M2, F8_E8M0, F16, BF16, F32, F64, F4, F6_E2M3, F6_E3M2 -> true;
            default -> false;
        };
    }

    public static Optional<DType> parse(String name) {
        try {
            return Optional.of(valueOf(name.toUpperCase(Locale.ROOT)));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }
}
