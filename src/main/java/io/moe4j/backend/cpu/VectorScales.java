package io.moe4j.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.nio.ByteOrder;

/** The 8 lane values of a panel's block scales and zero points, decoded in registers from their stored types. */
final class VectorScales {
    static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    static final VectorSpecies<Integer> I = IntVector.SPECIES_256;
    private static final VectorSpecies<Byte> B64 = ByteVector.SPECIES_64;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** 2^120: an E4M3 magnitude in float bits 20..26 reads as its value times 2^-120. */
    private static final float E4M3_UNBIAS = 0x1p120f;

    private VectorScales() {
    }

    /** The block scales of segment g of panel p of expert e (all 1 when m has none). */
    static FloatVector scale(PanelMatrix m, int expert, int panel, int group) {
        if (m.scales() == null) {
            return FloatVector.broadcast(F, 1f);
        }
        long idx = m.scaleIndex(expert, panel, group);
        return switch (m.scaleType()) {
            case F32 -> FloatVector.fromMemorySegment(F, m.scales(), 4 * idx, LE);
            case E8M0 -> e8m0(bytes(m, idx));
            case E4M3 -> e4m3(bytes(m, idx));
        };
    }

    /** The zero points of segment g of panel p of expert e, as floats (0 when m has none). */
    static FloatVector zero(PanelMatrix m, int expert, int panel, int group) {
        if (m.zeros() == null) {
            return FloatVector.zero(F);
        }
        ByteVector b = ByteVector.fromMemorySegment(B64, m.zeros(), m.scaleIndex(expert, panel, group), LE);
        return (FloatVector) b.convertShape(VectorOperators.B2F, F, 0);
    }

    private static IntVector bytes(PanelMatrix m, long idx) {
        ByteVector b = ByteVector.fromMemorySegment(B64, m.scales(), idx, LE);
        return (IntVector) b.convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
    }

    /** 2^(c−127): c in the exponent field; c = 0 is the subnormal 2^-127 and c = 255 is NaN, as E8m0 decodes. */
    static FloatVector e8m0(IntVector c) {
        IntVector bits = c.lanewise(VectorOperators.LSHL, 23);
        VectorMask<Integer> zero = c.eq(0);
        VectorMask<Integer> nan = c.eq(255);
        bits = bits.blend(0x00400000, zero).blend(0x7FC00000, nan);
        return bits.reinterpretAsFloats();
    }

    /** E4M3FN: magnitude bits to float bits 20..26 (×2^120 makes it exact, subnormals too), sign to bit 31. */
    static FloatVector e4m3(IntVector c) {
        FloatVector mag = c.and(0x7F).lanewise(VectorOperators.LSHL, 20).reinterpretAsFloats().mul(E4M3_UNBIAS);
        IntVector sign = c.and(0x80).lanewise(VectorOperators.LSHL, 24);
        FloatVector v = mag.reinterpretAsInts().or(sign).reinterpretAsFloats();
        return v.blend(Float.NaN, c.and(0x7F).eq(0x7F).cast(F));
    }
}
