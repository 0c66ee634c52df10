package io.moe4j.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.nio.ByteOrder;

/**
 * Decodes the block scales and zero points of every segment of a panel into floats, out[g·L + lane], a panel's lanes at
 * a time from their stored types, ahead of the panel's main loop.
 */
final class VectorScales {
    private static final VectorSpecies<Float> F = VectorShapes.F;
    private static final VectorSpecies<Integer> I = VectorShapes.I;
    private static final VectorSpecies<Byte> B64 = VectorShapes.B;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int L = PanelMatrix.LANES;
    /** 2^bias of E4M3 slots: {@link SlotDecode#minifloat} gives an E4M3 code's value times 2^-bias. */
    private static final float E4M3_UNBIAS = Math.scalb(1f, LaneCodec.FP8_E4M3.bias());

    private VectorScales() {
    }

    /** scales[g·L + lane] for the panel's segments (1 where m has no block scales). */
    static void scales(PanelMatrix m, int expert, int panel, float[] out) {
        int groups = m.groups();
        if (m.scales() == null) {
            java.util.Arrays.fill(out, 0, groups * L, 1f);
            return;
        }
        long idx = m.scaleIndex(expert, panel, 0);
        switch (m.scaleType()) {
            case F32 -> {
                for (int g = 0; g < groups; g++) {
                    FloatVector.fromMemorySegment(F, m.scales(), 4 * (idx + (long) g * L), LE).intoArray(out, g * L);
                }
            }
            case E8M0 -> {
                for (int g = 0; g < groups; g++) {
                    ByteVector b = ByteVector.fromMemorySegment(B64, m.scales(), idx + (long) g * L, LE);
                    IntVector c = (IntVector) b.convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                    // 2^(c−127) is c in the exponent field, normal for c = 1..254; c = 0 is 2^-127, a subnormal by
                    // value (no float holds it otherwise; the kernels still compute with it exactly), 255 is NaN.
                    IntVector bits = c.lanewise(VectorOperators.LSHL, 23)
                            .blend(0x00400000, c.eq(0)).blend(0x7FC00000, c.eq(255));
                    bits.reinterpretAsFloats().intoArray(out, g * L);
                }
            }
            case E4M3 -> {
                for (int g = 0; g < groups; g++) {
                    ByteVector b = ByteVector.fromMemorySegment(B64, m.scales(), idx + (long) g * L, LE);
                    IntVector c = (IntVector) b.convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                    IntVector mag = c.and(0x7F);
                    // Magnitude to float bits 20..26 and decoded as an FP8 slot (normal floats, exact), times 2^bias
                    // (exact: every E4M3 value is a normal float); 0x7F is NaN.
                    FloatVector v = SlotDecode.minifloat(mag.lanewise(VectorOperators.LSHL, 20),
                            c.and(0x80).lanewise(VectorOperators.LSHL, 24)).mul(E4M3_UNBIAS);
                    VectorMask<Float> nan = mag.eq(0x7F).cast(F);
                    v.blend(Float.NaN, nan).intoArray(out, g * L);
                }
            }
        }
    }

    /** zeros[g·L + lane] for the panel's segments (0 where m has no zero points). */
    static void zeros(PanelMatrix m, int expert, int panel, float[] out) {
        int groups = m.groups();
        if (m.zeros() == null) {
            java.util.Arrays.fill(out, 0, groups * L, 0f);
            return;
        }
        long idx = m.scaleIndex(expert, panel, 0);
        for (int g = 0; g < groups; g++) {
            ByteVector b = ByteVector.fromMemorySegment(B64, m.zeros(), idx + (long) g * L, LE);
            ((FloatVector) b.convertShape(VectorOperators.B2F, F, 0)).intoArray(out, g * L);
        }
    }
}
