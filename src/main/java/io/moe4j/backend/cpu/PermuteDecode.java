package io.moe4j.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The tables of the slot decodes by lookups ({@link SlotDecode}, where {@link BytePermutes#FAST}): FP8 by two
 * 128-entry byte lookups (vpermi2b), FP6 by one 64-entry 16-bit lookup (vpermi2w) a pair of slots. Every FP6 and FP8 value times 2^-bias is a bfloat16 whose float is
 * normal or zero, so a looked-up bfloat16 becomes the slot's float by a shift (lower half of a word) or a mask
 * (upper half): exact, no subnormal. {@link #bits} checks that when the tables are built.
 */
final class PermuteDecode {
    private static final VectorSpecies<Integer> I = VectorShapes.I;
    /** The byte species of the kernels' width (64 lanes at 512 bits): two of its vectors hold a 128-entry table. */
    private static final VectorSpecies<Byte> BYTES = I.withLanes(byte.class);
    /** The 16-bit species of the kernels' width (32 lanes at 512 bits): two of its vectors hold a 64-entry table. */
    private static final VectorSpecies<Short> SHORTS = I.withLanes(short.class);

    /** FP8 E4M3 and E5M2: halves 0 and 1 of the 128-entry tables of the high and low bytes of a magnitude's bfloat16. */
    static final ByteVector E4M3_HI0 = bytes(LaneCodec.FP8_E4M3, 24, 0);
    static final ByteVector E4M3_HI1 = bytes(LaneCodec.FP8_E4M3, 24, 1);
    static final ByteVector E4M3_LO0 = bytes(LaneCodec.FP8_E4M3, 16, 0);
    static final ByteVector E4M3_LO1 = bytes(LaneCodec.FP8_E4M3, 16, 1);
    static final ByteVector E5M2_HI0 = bytes(LaneCodec.FP8_E5M2, 24, 0);
    static final ByteVector E5M2_HI1 = bytes(LaneCodec.FP8_E5M2, 24, 1);
    static final ByteVector E5M2_LO0 = bytes(LaneCodec.FP8_E5M2, 16, 0);
    static final ByteVector E5M2_LO1 = bytes(LaneCodec.FP8_E5M2, 16, 1);
    /** FP6 E3M2 and E2M3: halves 0 and 1 of the 64-entry tables of every code's bfloat16, sign included. */
    static final ShortVector E3M2_0 = shorts(LaneCodec.FP6_E3M2, 0);
    static final ShortVector E3M2_1 = shorts(LaneCodec.FP6_E3M2, 1);
    static final ShortVector E2M3_0 = shorts(LaneCodec.FP6_E2M3, 0);
    static final ShortVector E2M3_1 = shorts(LaneCodec.FP6_E2M3, 1);
    /** Right shifts of the 16-bit lanes that bring FP6 codes 0 and 2 (codes 1 and 3) to the bottom of each half. */
    static final ShortVector FP6_PAIR_02 = halves(0, LaneCodec.fp6Position(2) - 16);
    static final ShortVector FP6_PAIR_13 = halves(LaneCodec.fp6Position(1), LaneCodec.fp6Position(3) - 16);

    private PermuteDecode() {
    }

    /**
     * Half {@code half} (entries 64·half ..) of a 128-entry byte table over the 7-bit magnitudes of an FP8 codec:
     * byte {@code shift / 8} of the float bits of the magnitude's value·2^-bias (with 16 low zero bits: every FP8
     * value is a bfloat16). Where the species has fewer than 64 byte lanes the table is cut short (such kernels do
     * not use it).
     */
    private static ByteVector bytes(LaneCodec codec, int shift, int half) {
        byte[] t = new byte[BYTES.length()];
        for (int i = 0; i < t.length; i++) {
            int mag = half * t.length + i;
            if (mag < 128 && !codec.special(mag)) {
                t[i] = (byte) (bits(codec, mag) >>> shift);
            }
        }
        return ByteVector.fromArray(BYTES, t, 0);
    }

    /** Half {@code half} of a 64-entry table of the bfloat16 of every FP6 code's value·2^-bias. */
    private static ShortVector shorts(LaneCodec codec, int half) {
        short[] t = new short[SHORTS.length()];
        for (int i = 0; i < t.length; i++) {
            int code = half * t.length + i;
            if (code < 64) {
                t[i] = (short) (bits(codec, code) >>> 16);
            }
        }
        return ShortVector.fromArray(SHORTS, t, 0);
    }

    /** A 16-bit vector holding {@code low} in the lower and {@code high} in the upper half of each 32-bit lane. */
    private static ShortVector halves(int low, int high) {
        short[] t = new short[SHORTS.length()];
        for (int i = 0; i < t.length; i++) {
            t[i] = (short) (i % 2 == 0 ? low : high);
        }
        return ShortVector.fromArray(SHORTS, t, 0);
    }

    /**
     * The float bits of a code's value·2^-bias, checked to be a bfloat16 (16 low zero bits) whose float is normal
     * or zero: the tables hold nothing else.
     */
    private static int bits(LaneCodec codec, int code) {
        int b = Float.floatToRawIntBits(Math.scalb(codec.value(code), -codec.bias()));
        if ((b & 0xFFFF) != 0 || ((b & 0x7F800000) == 0 && (b & 0x7FFFFFFF) != 0)) {
            throw new IllegalStateException(codec + " code 0x" + Integer.toHexString(code) + " is no normal bfloat16");
        }
        return b;
    }
}
