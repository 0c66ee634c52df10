package io.moe4j.backend.cpu;

import io.moe4j.format.ElementFormat;
import io.moe4j.quant.CodeType;

/**
 * How the codes of one {@link CodeType} sit in the 32-bit lane words of a {@link PanelMatrix}, and how a lane word
 * decodes back. A lane word holds {@link #slots()} consecutive columns of one row, re-laid so that the vector kernels
 * turn each slot into a float with one or two shifts and masks instead of a table lookup:
 *
 * <ul>
 *   <li>Sign-magnitude floats (FP4, FP6, FP8, F16): magnitude bits placed so that, shifted to the float's exponent
 *       and mantissa fields, they read as the element's value times 2^-{@link #bias()} (a float32 subnormal for the
 *       element's own subnormals, so those stay exact), and the sign placed to be shifted to bit 31.</li>
 *   <li>Integers (INT4, INT8): stored offset-binary, p = code + {@link #offset()}, so that masked into the
 *       mantissa field they read as p · 2^-bias (a float32 subnormal, exact); the kernels subtract the offset through
 *       the sum of the inputs.</li>
 *   <li>BF16 is a float32's top half and F32 is itself: no bias.</li>
 * </ul>
 *
 * The layouts of slot j (mask positions) are fixed here and mirrored by the vector decoders; {@link #code} is the
 * scalar inverse the scalar kernels and the tests use.
 */
enum LaneCodec {
    /**
     * E2M1 in the layout that needs fewest vector operations (27 per 64 codes; see {@code Fp4Lanes}): six slots
     * whose sign sits 9 bits above the magnitude, so one shift brings both into place, and two split slots.
     */
    FP4(CodeType.FP4_E2M1, 8, 126, 0, ElementFormat.E2M1),
    FP6_E3M2(CodeType.FP6_E3M2, 5, 124, 0, ElementFormat.E3M2),
    FP6_E2M3(CodeType.FP6_E2M3, 5, 126, 0, ElementFormat.E2M3),
    FP8_E4M3(CodeType.FP8_E4M3, 4, 120, 0, ElementFormat.E4M3FN),
    FP8_E5M2(CodeType.FP8_E5M2, 4, 112, 0, ElementFormat.E5M2),
    /** IEEE half: 5 exponent, 10 mantissa bits, bias 15. */
    F16(CodeType.F16, 2, 112, 0, null),
    /** Offset-binary nibble p = code + 8 at bits 19..22 of the float: p · 2^-130. */
    INT4(CodeType.INT4, 8, 130, 8, null),
    /** Offset-binary byte p = code + 128 at bits 15..22 of the float: p · 2^-134. */
    INT8(CodeType.INT8, 4, 134, 128, null),
    BF16(CodeType.BF16, 2, 0, 0, null),
    F32(CodeType.F32, 1, 0, 0, null);

    /**
     * FP4 slot positions: magnitude bits [MAG[j], MAG[j]+3) and sign bit SIGN[j] of the lane word. Slots 0..5 have
     * their sign 9 bits above the magnitude (the distance between float bits 22 and 31); slots 6 and 7 use the bits
     * left over.
     */
    static final int[] FP4_MAG = {0, 3, 6, 16, 19, 22, -1, -1};
    static final int[] FP4_SIGN = {9, 12, 15, 25, 28, 31, 14, 30};
    /** FP4 slots 6 and 7 split their magnitude: low two bits at [FP4_LOW2[j], +2), the top bit at FP4_TOP[j]. */
    static final int[] FP4_LOW2 = {-1, -1, -1, -1, -1, -1, 10, 26};
    static final int[] FP4_TOP = {-1, -1, -1, -1, -1, -1, 13, 29};

    private final CodeType type;
    private final int slots;
    private final int bias;
    private final int offset;
    private final ElementFormat element;

    LaneCodec(CodeType type, int slots, int bias, int offset, ElementFormat element) {
        this.type = type;
        this.slots = slots;
        this.bias = bias;
        this.offset = offset;
        this.element = element;
    }

    static LaneCodec of(CodeType t) {
        for (LaneCodec c : values()) {
            if (c.type == t) {
                return c;
            }
        }
        throw new IllegalArgumentException("no lane codec for " + t);
    }

    CodeType type() {
        return type;
    }

    /** Columns one lane word holds. */
    int slots() {
        return slots;
    }

    /** A decoded slot is the element's value times 2^-bias (the integer p times 2^-bias for INT4/INT8). */
    int bias() {
        return bias;
    }

    /** p = code + offset for the integer codecs; 0 for the floats. */
    int offset() {
        return offset;
    }

    /** Bits of the raw code (as the checkpoint stores it). */
    int codeBits() {
        return type.bits();
    }

    /** Magnitude bits of a sign-magnitude code (0 for the others). */
    int magnitudeBits() {
        return switch (this) {
            case FP4 -> 3;
            case FP6_E3M2, FP6_E2M3 -> 5;
            case FP8_E4M3, FP8_E5M2 -> 7;
            case F16 -> 15;
            default -> 0;
        };
    }

    /**
     * Whether a raw code is NaN or infinite. The shift-and-mask decoding reads such codes as finite numbers, so
     * packing refuses weights that hold them instead of computing something else than the reference.
     */
    boolean special(int code) {
        return switch (this) {
            case FP8_E4M3 -> (code & 0x7F) == 0x7F;
            case FP8_E5M2 -> (code & 0x7C) == 0x7C;
            case F16 -> (code & 0x7C00) == 0x7C00;
            default -> false;
        };
    }

    /** The lane word holding raw codes codes[from .. from + slots) (missing slots: code 0, the value 0). */
    int pack(int[] codes, int from) {
        int w = 0;
        for (int j = 0; j < slots; j++) {
            w |= place(codes[from + j], j);
        }
        return w;
    }

    /** The bits raw code {@code code} contributes to a lane word at slot j. */
    private int place(int code, int j) {
        return switch (this) {
            case FP4 -> {
                int mag = code & 7;
                int sign = (code >>> 3) & 1;
                int bits = sign << FP4_SIGN[j];
                if (FP4_MAG[j] >= 0) {
                    yield bits | mag << FP4_MAG[j];
                }
                yield bits | (mag & 3) << FP4_LOW2[j] | (mag >>> 2) << FP4_TOP[j];
            }
            case FP6_E3M2, FP6_E2M3, FP8_E4M3, FP8_E5M2, F16 -> {
                int m = magnitudeBits();
                int mag = code & ((1 << m) - 1);
                int sign = (code >>> m) & 1;
                yield mag << (m * j) | sign << (32 - slots + j);
            }
            case INT4 -> ((code + offset) & 0xF) << (4 * j);
            case INT8 -> ((code + offset) & 0xFF) << (8 * j);
            case BF16 -> (code & 0xFFFF) << (16 * j);
            case F32 -> code;
        };
    }

    /** The raw code at slot j of a lane word: the inverse of {@link #pack}. */
    int code(int word, int j) {
        return switch (this) {
            case FP4 -> {
                int sign = (word >>> FP4_SIGN[j]) & 1;
                int mag = FP4_MAG[j] >= 0 ? (word >>> FP4_MAG[j]) & 7
                        : (word >>> FP4_LOW2[j]) & 3 | ((word >>> FP4_TOP[j]) & 1) << 2;
                yield sign << 3 | mag;
            }
            case FP6_E3M2, FP6_E2M3, FP8_E4M3, FP8_E5M2, F16 -> {
                int m = magnitudeBits();
                int mag = (word >>> (m * j)) & ((1 << m) - 1);
                int sign = (word >>> (32 - slots + j)) & 1;
                yield sign << m | mag;
            }
            // Back to the signed code: p − offset, as a two's-complement value of the code's width.
            case INT4 -> ((word >>> (4 * j)) & 0xF) - offset;
            case INT8 -> ((word >>> (8 * j)) & 0xFF) - offset;
            case BF16 -> (word >>> (16 * j)) & 0xFFFF;
            case F32 -> word;
        };
    }

    /** The value of a raw code (integers: the signed integer itself). Exact. */
    float value(int code) {
        return switch (this) {
            case FP4, FP6_E3M2, FP6_E2M3, FP8_E4M3, FP8_E5M2 -> element.decode(code);
            case F16 -> Float.float16ToFloat((short) code);
            case INT4, INT8 -> code;
            case BF16 -> Float.intBitsToFloat(code << 16);
            case F32 -> Float.intBitsToFloat(code);
        };
    }
}
