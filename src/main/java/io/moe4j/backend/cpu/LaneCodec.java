package io.moe4j.backend.cpu;

import io.moe4j.format.ElementFormat;
import io.moe4j.quant.CodeType;

/**
 * How the codes of one {@link CodeType} sit in the 32-bit lane words of a {@link PanelMatrix}, and how a lane word
 * decodes back. A lane word holds {@link #slots()} consecutive columns of one row, re-laid so that the vector kernels
 * turn each slot into a float with a few integer operations and at most one table lookup.
 *
 * <p>Every decoded slot is a <em>normal</em> float or exact zero before it meets any floating-point operation: Intel
 * cores run float operations with subnormal operands through microcode assists, 50-100x slower, and Java has no
 * flush-to-zero mode. How each codec gets there ({@link SlotDecode} holds the vector forms, docs/cpu-decode.md the
 * measurements):
 *
 * <ul>
 *   <li>FP4: the raw 4-bit code in nibble j; a 16-entry table of the values times 2^-{@link #bias()}.</li>
 *   <li>FP8: the raw code in byte j. With byte permutes ({@link BytePermutes}) two 128-entry lookups of the
 *       magnitude give the high and low bytes of the value's bfloat16 (every FP8 value·2^-bias is a normal
 *       bfloat16 or zero), the sign is OR-ed in; otherwise the minifloat step below.</li>
 *   <li>FP6: the raw code (sign on top) at bits {@link #fp6Position}(j); with permutes a 64-entry 16-bit lookup of
 *       the whole code gives the value's bfloat16; otherwise the minifloat step below.</li>
 *   <li>FP6 and FP8 (without permutes), F16: magnitude bits placed where, shifted into the float's exponent and
 *       mantissa fields, they read as the element's exponent e and mantissa m; an exponent base of 2^64 is OR-ed in so that every code reads as
 *       a normal float A, and min(2A - 2^-62, A) turns the codes with e = 0 (the element's own subnormals, which
 *       A reads with a hidden 1) into their exact values, all normal. The sign is OR-ed in last.</li>
 *   <li>Integers (INT4, INT8): stored offset-binary, p = code + {@link #offset()}, and converted to float exactly
 *       (integers, normal or zero); the kernels subtract the offset through the sum of the inputs.</li>
 *   <li>BF16 is a float32's top half and F32 is itself: no bias. Their subnormal codes (|w| &lt; 2^-126) are
 *       replaced by zero of the same sign when packed ({@link #normalCode}).</li>
 * </ul>
 *
 * The layouts of slot j (mask positions) are fixed here and mirrored by the vector decoders; {@link #code} is the
 * scalar inverse the scalar kernels and the tests use.
 */
enum LaneCodec {
    /** E2M1: the raw code (sign in bit 3) in nibble j; decoded by a 16-entry table of value · 2^-120. */
    FP4(CodeType.FP4_E2M1, 8, 120, 0, ElementFormat.E2M1),
    FP6_E3M2(CodeType.FP6_E3M2, 5, 60, 0, ElementFormat.E3M2),
    FP6_E2M3(CodeType.FP6_E2M3, 5, 62, 0, ElementFormat.E2M3),
    FP8_E4M3(CodeType.FP8_E4M3, 4, 56, 0, ElementFormat.E4M3FN),
    FP8_E5M2(CodeType.FP8_E5M2, 4, 48, 0, ElementFormat.E5M2),
    /** IEEE half: 5 exponent, 10 mantissa bits, bias 15. */
    F16(CodeType.F16, 2, 48, 0, null),
    /** Offset-binary nibble p = code + 8 at bits 4j..4j+3, converted to the float p. */
    INT4(CodeType.INT4, 8, 0, 8, null),
    /** Offset-binary byte p = code + 128 at bits 8j..8j+7, converted to the float p. */
    INT8(CodeType.INT8, 4, 0, 128, null),
    BF16(CodeType.BF16, 2, 0, 0, null),
    F32(CodeType.F32, 1, 0, 0, null);

    /**
     * The exponent base OR-ed into the float bits of a sign-magnitude slot (FP6, FP8, F16): 2^64, bit 29, which no
     * element exponent reaches. With it a slot of element exponent e and mantissa m reads as A = 2^(e+64-127)·1.m,
     * a normal float for every code, and {@link #MINIFLOAT_HALF} corrects the codes with e = 0.
     */
    static final int MINIFLOAT_BASE = 0x20000000;
    /**
     * H = 2^(64-126), the float that A reaches at element exponent 1. For e = 0, A lies in [H/2, H) and the slot's
     * value·2^-bias is 2A - H (the element's subnormal 0.m read at exponent 1 - bias), exact and normal or zero; for
     * e &ge; 1, 2A - H &ge; A. So min(2A - H, A) is the value for every code, and 2A - H is one fused multiply-add of
     * normal operands.
     */
    static final float MINIFLOAT_HALF = 0x1p-62f;

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

    /** A decoded slot is the element's value times 2^-bias (the integer p for INT4/INT8, bias 0). */
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

    /**
     * The code packed for a raw code: itself, except that BF16 and F32 subnormals (exponent field 0, mantissa not
     * 0) become zero of the same sign. Those are the only codes whose values are float32 subnormals; a weight under
     * 2^-126 changes a row's sum by less than 2^-126·|x| per column, below one float ulp of any sum over 2^-103·Σ|x|.
     */
    int normalCode(int code) {
        return switch (this) {
            case BF16 -> (code & 0x7F80) == 0 ? code & 0x8000 : code;
            case F32 -> (code & 0x7F800000) == 0 ? code & 0x80000000 : code;
            default -> code;
        };
    }

    /** The float bits of FP4 code c's value times 2^-bias, c < 16: the table the vector kernels look codes up in. */
    static int[] fp4Table() {
        int[] t = new int[16];
        for (int c = 0; c < 16; c++) {
            t[c] = Float.floatToRawIntBits(Math.scalb(ElementFormat.E2M1.decode(c), -FP4.bias()));
        }
        return t;
    }

    /**
     * The lowest bit of FP6 slot j's raw 6-bit code (sign on top) in a lane word: 0, 6, 18, 24 for slots 0-3 and 12
     * for slot 4. Codes 0 and 2 (1 and 3) then sit at the same place in the word's two 16-bit halves up to a shift
     * of 2, so that one variable shift and one 16-bit lookup decode a pair ({@link SlotDecode#fp6E3m2}).
     */
    static int fp6Position(int j) {
        return switch (j) {
            case 0 -> 0;
            case 1 -> 6;
            case 2 -> 18;
            case 3 -> 24;
            case 4 -> 12;
            default -> throw new IllegalArgumentException("FP6 slot " + j);
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
            case FP4 -> (code & 0xF) << (4 * j);
            case FP8_E4M3, FP8_E5M2 -> (code & 0xFF) << (8 * j);
            case FP6_E3M2, FP6_E2M3 -> (code & 0x3F) << fp6Position(j);
            case F16 -> {
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
            case FP4 -> (word >>> (4 * j)) & 0xF;
            case FP8_E4M3, FP8_E5M2 -> (word >>> (8 * j)) & 0xFF;
            case FP6_E3M2, FP6_E2M3 -> (word >>> fp6Position(j)) & 0x3F;
            case F16 -> {
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
