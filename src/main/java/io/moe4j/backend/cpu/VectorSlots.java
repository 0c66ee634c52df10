package io.moe4j.backend.cpu;

import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;

/**
 * Turning slot j of 8 lane words into 8 float bit patterns, one method per {@link LaneCodec}, with the codec's
 * constants written out: vector shifts by an immediate are several times cheaper than by a variable, and C2 folds
 * the literal arguments of these small helpers into immediates when it inlines them. The float read from a slot is
 * the element's value times 2^-bias (see {@link LaneCodec}).
 */
final class VectorSlots {
    /** FP4 slots whose sign sits 9 bits above the magnitude need one shift for both: sign | magnitude at 22..24. */
    static final int FP4_MASK = 0x81C00000;
    static final int SIGN = 0x80000000;

    private VectorSlots() {
    }

    /** (v shifted left by s, or right by −s) & mask. */
    static IntVector bits(IntVector v, int s, int mask) {
        IntVector t = s > 0 ? v.lanewise(VectorOperators.LSHL, s) : s < 0 ? v.lanewise(VectorOperators.LSHR, -s) : v;
        return t.and(mask);
    }

    /** A sign-magnitude slot: magnitude moved by magShift under magMask, sign moved left by signShift to bit 31. */
    static IntVector sm(IntVector v, int magShift, int magMask, int signShift) {
        return bits(v, magShift, magMask).or(bits(v, signShift, SIGN));
    }

    static IntVector fp4(IntVector v, int j) {
        return switch (j) {
            case 0 -> bits(v, 22, FP4_MASK);
            case 1 -> bits(v, 19, FP4_MASK);
            case 2 -> bits(v, 16, FP4_MASK);
            case 3 -> bits(v, 6, FP4_MASK);
            case 4 -> bits(v, 3, FP4_MASK);
            case 5 -> v.and(FP4_MASK);
            // Split slots: low magnitude bits, top magnitude bit and sign each moved on their own.
            case 6 -> bits(v, 12, 0x00C00000).or(bits(v, 11, 0x01000000)).or(bits(v, 17, SIGN));
            default -> bits(v, -4, 0x00C00000).or(bits(v, -5, 0x01000000)).or(bits(v, 1, SIGN));
        };
    }

    static IntVector fp6e3m2(IntVector v, int j) {
        return sm(v, 21 - 5 * j, 0x03E00000, 4 - j);
    }

    static IntVector fp6e2m3(IntVector v, int j) {
        return sm(v, 20 - 5 * j, 0x01F00000, 4 - j);
    }

    static IntVector fp8e4m3(IntVector v, int j) {
        return sm(v, 20 - 7 * j, 0x07F00000, 3 - j);
    }

    static IntVector fp8e5m2(IntVector v, int j) {
        return sm(v, 21 - 7 * j, 0x0FE00000, 3 - j);
    }

    static IntVector f16(IntVector v, int j) {
        return sm(v, 13 - 15 * j, 0x0FFFE000, 1 - j);
    }

    /** Offset-binary nibble j to float bits 19..22. */
    static IntVector int4(IntVector v, int j) {
        return bits(v, 19 - 4 * j, 0x00780000);
    }

    /** Offset-binary byte j to float bits 15..22. */
    static IntVector int8(IntVector v, int j) {
        return bits(v, 15 - 8 * j, 0x007F8000);
    }

    /** Offset-binary nibble j as the integer p in 0..15. */
    static IntVector int4p(IntVector v, int j) {
        return bits(v, -4 * j, 0xF);
    }

    /** Offset-binary byte j as the integer p in 0..255. */
    static IntVector int8p(IntVector v, int j) {
        return bits(v, -8 * j, 0xFF);
    }

    static IntVector bf16(IntVector v, int j) {
        return j == 0 ? v.lanewise(VectorOperators.LSHL, 16) : v.and(0xFFFF0000);
    }
}
