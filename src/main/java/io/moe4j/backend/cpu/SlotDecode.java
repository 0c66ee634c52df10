package io.moe4j.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The step that turns slot j of a vector of lane words into the floats the vector kernels multiply, one method per
 * codec: every result is a normal float or exact zero, for every code ({@link LaneCodec} says why and how;
 * {@code SubnormalDecodeTest} runs every code of every codec at every slot through these methods). The kernels call
 * them with constant slot numbers on every word; they are small enough that the JIT inlines them, so the shifts
 * become immediates and no vector crosses a real call.
 */
final class SlotDecode {
    private static final VectorSpecies<Integer> I = VectorShapes.I;
    /**
     * Whether FP4 codes are looked up in one 16-entry table with a two-vector permute (vpermi2d/vpermt2d, AVX-512
     * VL): one shift and one permute a slot. Without AVX-512 the JIT lowers that permute to several instructions
     * (6.8 against 22.1 G multiply-adds/s in the FP4 microbenchmark of docs/cpu-decode.md), and an 8-entry table
     * of magnitudes (vpermps) with the sign OR-ed in after runs faster (14.1).
     */
    static final boolean WIDE_FP4_LOOKUP = IntVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    /** The 16 table entries, padded so that a 16-lane vector can be read from entry 8 too. */
    private static final int[] FP4_TABLE = java.util.Arrays.copyOf(LaneCodec.fp4Table(), 32);
    /** FP4 codes 0..7 (the positive values, also the magnitudes of 8..15); with 16 lanes the whole table. */
    private static final IntVector FP4_LOW = IntVector.fromArray(I, FP4_TABLE, 0);
    /** FP4 codes 8..15 (the negative values), used with 8 lanes only. */
    private static final IntVector FP4_HIGH = IntVector.fromArray(I, FP4_TABLE, 8);
    /**
     * The magnitudes of {@link #fp4Narrow}'s lookup with bits 28..30 set to the magnitude's own three bits: every
     * entry is below 2^-95, so those exponent bits are 0 in the value, and XOR-ing the code shifted to bits 28..31
     * clears them again while it sets the sign (one operation for the sign instead of a mask and an OR).
     */
    private static final IntVector FP4_MAGNITUDES_TAGGED = IntVector.fromArray(I, fp4TaggedMagnitudes(), 0);
    /** Whether one vector holds the whole table (16 lanes: 512-bit kernels), so one one-vector permute looks up. */
    private static final boolean ONE_VECTOR_TABLE = I.length() >= 16;
    private static final int SIGN = 0x80000000;
    /**
     * How the FP6/FP8 minifloat step makes 2A - H: one FMA where the kernels run 512-bit (32 vector registers), an
     * add and a subtract at 256 bits, where C2 (JDK 25) copied the FMA's accumulator operand and reloaded its two
     * constants on every slot among AVX2's 16 registers (FusedDecodeBench on Zen 3: FP8 6.4 -> 7.3 G multiply-adds/s).
     * Both are exact: 2A and 2A - H are floats.
     */
    private static final boolean TWICE_BY_FMA = I.length() >= 16;
    private static final VectorOperators.Binary SHL = VectorOperators.LSHL;
    private static final VectorOperators.Binary SHR = VectorOperators.LSHR;

    private SlotDecode() {
    }

    /** FP4 slot j (code in nibble j): value·2^-120. */
    static FloatVector fp4(IntVector word, int j) {
        return fp4(j == 0 ? word : word.lanewise(SHR, 4 * j));
    }

    /*
     * One method per element format, each with its constants, no branch and no call of its own but the Vector
     * API's. The kernels call them in short loops over j (two slots a pass), not once per slot written out: each
     * minifloat slot parses into so many nodes that C2 (JDK 25) stopped inlining at the fourth written-out FP8 slot
     * (NodeCountInliningCutoff) and allocated that slot's vectors on the heap, 128-384 bytes a word, 10-30x slower
     * (measured with -XX:+PrintInlining and the allocated bytes per panel). Once inlined, the JIT unrolls the short
     * loops and the shift counts become constants. A helper of their own called from inside would be a colder call
     * site, inlined only under 35 bytecodes, so the minifloat step is written out in each ({@link #minifloat} is the
     * same step on its own). A slot's magnitude moves to its float position by one shift, left or right by j's
     * count: both shifts are written, one by max(n, 0) and the other by max(-n, 0), so that no branch on j merges
     * two vectors, and once the loops are unrolled the shift by 0 disappears (a rotate, as before, is three
     * instructions without AVX-512). The sign needs only a left shift.
     *
     * With byte and 16-bit permutes (BytePermutes.FAST) FP6 and FP8 are looked up instead, written out here for
     * the same reason: split into helpers of under 35 bytecodes, some were still left as calls ("callee is too large"
     * once a helper had been compiled on its own, "NodeCountInliningCutoff") and their vectors went to the heap. A
     * lookup does not depend on which slot of a word (FP8) or a pair (FP6) is asked for, so the JIT computes it once
     * for all of them; the branches on j fold once the kernels' short loops are unrolled (0 bytes allocated a panel,
     * FusedDecodeBench).
     */

    /**
     * FP6 E3M2 slot j (raw code at bits {@link LaneCodec#fp6Position}(j)): value·2^-60. By a 16-bit lookup where
     * {@link BytePermutes#FAST} ({@link PermuteDecode}); else magnitude to float bits 21..25, sign to 31.
     */
    static FloatVector fp6E3m2(IntVector word, int j) {
        if (BytePermutes.FAST) {
            ShortVector index = j == 4 ? word.lanewise(SHR, 12).reinterpretAsShorts() : word.reinterpretAsShorts()
                    .lanewise(SHR, (j & 1) == 0 ? PermuteDecode.FP6_PAIR_02 : PermuteDecode.FP6_PAIR_13);
            IntVector w = index.selectFrom(PermuteDecode.E3M2_0, PermuteDecode.E3M2_1).reinterpretAsInts();
            return (j == 4 || j < 2 ? w.lanewise(SHL, 16) : w.and(0xFFFF0000)).reinterpretAsFloats();
        }
        int at = LaneCodec.fp6Position(j);
        FloatVector a = word.lanewise(SHL, Math.max(21 - at, 0)).lanewise(SHR, Math.max(at - 21, 0)).and(0x03E00000)
                .or(LaneCodec.MINIFLOAT_BASE).reinterpretAsFloats();
        return (TWICE_BY_FMA ? a.fma(2f, -LaneCodec.MINIFLOAT_HALF) : a.add(a).sub(LaneCodec.MINIFLOAT_HALF))
                .reinterpretAsInts().min(a.reinterpretAsInts())
                .or(word.lanewise(SHL, 26 - at).and(SIGN)).reinterpretAsFloats();
    }

    /** FP6 E2M3 slot j: value·2^-62, as {@link #fp6E3m2} (magnitude to float bits 20..24). */
    static FloatVector fp6E2m3(IntVector word, int j) {
        if (BytePermutes.FAST) {
            ShortVector index = j == 4 ? word.lanewise(SHR, 12).reinterpretAsShorts() : word.reinterpretAsShorts()
                    .lanewise(SHR, (j & 1) == 0 ? PermuteDecode.FP6_PAIR_02 : PermuteDecode.FP6_PAIR_13);
            IntVector w = index.selectFrom(PermuteDecode.E2M3_0, PermuteDecode.E2M3_1).reinterpretAsInts();
            return (j == 4 || j < 2 ? w.lanewise(SHL, 16) : w.and(0xFFFF0000)).reinterpretAsFloats();
        }
        int at = LaneCodec.fp6Position(j);
        FloatVector a = word.lanewise(SHL, Math.max(20 - at, 0)).lanewise(SHR, Math.max(at - 20, 0)).and(0x01F00000)
                .or(LaneCodec.MINIFLOAT_BASE).reinterpretAsFloats();
        return (TWICE_BY_FMA ? a.fma(2f, -LaneCodec.MINIFLOAT_HALF) : a.add(a).sub(LaneCodec.MINIFLOAT_HALF))
                .reinterpretAsInts().min(a.reinterpretAsInts())
                .or(word.lanewise(SHL, 26 - at).and(SIGN)).reinterpretAsFloats();
    }

    /**
     * FP8 E4M3 slot j (raw code in byte j): value·2^-56. By byte lookups where {@link BytePermutes#FAST}
     * ({@link PermuteDecode}); else magnitude (bits 8j..8j+6) to float bits 20..26, sign (8j+7) to 31.
     */
    static FloatVector fp8E4m3(IntVector word, int j) {
        if (BytePermutes.FAST) {
            ByteVector b = word.reinterpretAsBytes();
            ShortVector hi = b.selectFrom(PermuteDecode.E4M3_HI0, PermuteDecode.E4M3_HI1).or(b.and((byte) 0x80))
                    .reinterpretAsShorts();
            ShortVector lo = b.selectFrom(PermuteDecode.E4M3_LO0, PermuteDecode.E4M3_LO1).reinterpretAsShorts();
            IntVector w = ((j & 1) == 0 ? hi.lanewise(SHL, 8).or(lo.and((short) 0xFF))
                    : hi.and((short) 0xFF00).or(lo.lanewise(SHR, 8))).reinterpretAsInts();
            return (j < 2 ? w.lanewise(SHL, 16) : w.and(0xFFFF0000)).reinterpretAsFloats();
        }
        FloatVector a = word.lanewise(SHL, Math.max(20 - 8 * j, 0)).lanewise(SHR, Math.max(8 * j - 20, 0))
                .and(0x07F00000).or(LaneCodec.MINIFLOAT_BASE).reinterpretAsFloats();
        return (TWICE_BY_FMA ? a.fma(2f, -LaneCodec.MINIFLOAT_HALF) : a.add(a).sub(LaneCodec.MINIFLOAT_HALF))
                .reinterpretAsInts().min(a.reinterpretAsInts())
                .or(word.lanewise(SHL, 24 - 8 * j).and(SIGN)).reinterpretAsFloats();
    }

    /** FP8 E5M2 slot j (raw code in byte j): value·2^-48, as {@link #fp8E4m3} (magnitude to float bits 21..27). */
    static FloatVector fp8E5m2(IntVector word, int j) {
        if (BytePermutes.FAST) {
            ByteVector b = word.reinterpretAsBytes();
            ShortVector hi = b.selectFrom(PermuteDecode.E5M2_HI0, PermuteDecode.E5M2_HI1).or(b.and((byte) 0x80))
                    .reinterpretAsShorts();
            ShortVector lo = b.selectFrom(PermuteDecode.E5M2_LO0, PermuteDecode.E5M2_LO1).reinterpretAsShorts();
            IntVector w = ((j & 1) == 0 ? hi.lanewise(SHL, 8).or(lo.and((short) 0xFF))
                    : hi.and((short) 0xFF00).or(lo.lanewise(SHR, 8))).reinterpretAsInts();
            return (j < 2 ? w.lanewise(SHL, 16) : w.and(0xFFFF0000)).reinterpretAsFloats();
        }
        FloatVector a = word.lanewise(SHL, Math.max(21 - 8 * j, 0)).lanewise(SHR, Math.max(8 * j - 21, 0))
                .and(0x0FE00000).or(LaneCodec.MINIFLOAT_BASE).reinterpretAsFloats();
        return (TWICE_BY_FMA ? a.fma(2f, -LaneCodec.MINIFLOAT_HALF) : a.add(a).sub(LaneCodec.MINIFLOAT_HALF))
                .reinterpretAsInts().min(a.reinterpretAsInts())
                .or(word.lanewise(SHL, 24 - 8 * j).and(SIGN)).reinterpretAsFloats();
    }

    /** IEEE half slot j (magnitude at bits 15j..15j+14 to float bits 13..27, sign at 30 + j): value·2^-48. */
    static FloatVector f16(IntVector word, int j) {
        FloatVector a = word.lanewise(SHL, Math.max(13 - 15 * j, 0)).lanewise(SHR, Math.max(15 * j - 13, 0))
                .and(0x0FFFE000).or(LaneCodec.MINIFLOAT_BASE).reinterpretAsFloats();
        return a.fma(2f, -LaneCodec.MINIFLOAT_HALF).reinterpretAsInts().min(a.reinterpretAsInts())
                .or(word.lanewise(SHL, 1 - j).and(SIGN)).reinterpretAsFloats();
    }

    /** INT4 slot j: the offset-binary nibble p = code + 8 as the float p. */
    static FloatVector int4(IntVector word, int j) {
        // The top nibble needs no mask after its shift.
        return (FloatVector) (j == 7 ? word.lanewise(SHR, 28) : word.lanewise(SHR, 4 * j).and(0xF))
                .convert(VectorOperators.I2F, 0);
    }

    /** INT8 slot j: the offset-binary byte p = code + 128 as the float p. */
    static FloatVector int8(IntVector word, int j) {
        return (FloatVector) word.lanewise(SHR, 8 * j).and(0xFF).convert(VectorOperators.I2F, 0);
    }

    /** bfloat16 slot j: the half as the top half of a float (subnormal codes were packed as zeros). */
    static FloatVector bf16(IntVector word, int j) {
        return word.lanewise(SHL, 16 - 16 * j).and(0xFFFF0000).reinterpretAsFloats();
    }


    /** The FP4 codes in bits 0..3 of each lane (higher bits ignored) as value·2^-120, the table the machine suits. */
    static FloatVector fp4(IntVector code) {
        return WIDE_FP4_LOOKUP ? fp4Wide(code) : fp4Narrow(code);
    }

    /**
     * {@link #fp4} by one 16-entry lookup (the index wraps to its low 4 bits): one vpermd of the table where a vector
     * has 16 lanes, else a two-vector permute of its halves (vpermi2d).
     */
    static FloatVector fp4Wide(IntVector code) {
        return (ONE_VECTOR_TABLE ? code.selectFrom(FP4_LOW) : code.selectFrom(FP4_LOW, FP4_HIGH)).reinterpretAsFloats();
    }

    /**
     * {@link #fp4} by an 8-entry lookup of the magnitude (bits 0..2; the index wraps) and the sign (bit 3): the
     * code's four bits XOR-ed at bits 28..31 into the tagged entry ({@link #FP4_MAGNITUDES_TAGGED}) clear the tag
     * and set the sign.
     */
    static FloatVector fp4Narrow(IntVector code) {
        return code.selectFrom(FP4_MAGNITUDES_TAGGED).lanewise(VectorOperators.XOR, code.lanewise(SHL, 28))
                .reinterpretAsFloats();
    }

    private static int[] fp4TaggedMagnitudes() {
        int[] t = new int[I.length()];
        for (int m = 0; m < t.length; m++) {
            int value = FP4_TABLE[m & 7];
            if ((value & 0x70000000) != 0) {
                throw new AssertionError("FP4 table entry " + m + " uses exponent bits 28..30");
            }
            t[m] = value ^ ((m & 7) << 28);
        }
        return t;
    }

    /**
     * The minifloat step of the FP6, FP8 and F16 slots above, on its own (the block scales' decode uses it):
     * {@code magnitude} holds the element's exponent and mantissa bits in the float's fields (exponent at bit 23 up,
     * everything else 0), {@code sign} the sign at bit 31 (all else 0). Returns value·2^-bias: A = magnitude | 2^64
     * is normal for every code, and min(2A - H, A) is 2A - H for the codes of exponent 0 and A for the others (see
     * {@link LaneCodec#MINIFLOAT_HALF}). Both are non-negative, so the minimum is taken on their bits as integers:
     * one instruction, where Java's float min is several.
     */
    static FloatVector minifloat(IntVector magnitude, IntVector sign) {
        FloatVector a = magnitude.or(LaneCodec.MINIFLOAT_BASE).reinterpretAsFloats();
        return a.fma(2f, -LaneCodec.MINIFLOAT_HALF).reinterpretAsInts().min(a.reinterpretAsInts()).or(sign)
                .reinterpretAsFloats();
    }

    /** Small non-negative integers (offset-binary INT4/INT8 codes p) to the floats p, exact. */
    static FloatVector integers(IntVector p) {
        return (FloatVector) p.convert(VectorOperators.I2F, 0);
    }
}
