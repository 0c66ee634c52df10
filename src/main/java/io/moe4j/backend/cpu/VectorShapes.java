package io.moe4j.backend.cpu;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The species of the vector kernels at the {@link VectorWidth} of this JVM: one panel's lanes in each vector. Static
 * finals, so that the JIT treats them as constants in every kernel that reads them.
 */
final class VectorShapes {
    /** A panel's floats: one lane a row. */
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED.length() == VectorWidth.LANES
            ? FloatVector.SPECIES_PREFERRED : VectorSpecies.of(float.class, VectorShape.forBitSize(VectorWidth.BITS));
    /** A panel's lane words. */
    static final VectorSpecies<Integer> I = F.withLanes(int.class);
    /** One byte a lane (block scales, zero points), widened to {@link #I} or {@link #F}. */
    static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(VectorWidth.BITS / 4));
    /** Bytes of one lane word of a panel: 4 a lane. */
    static final long WORD_BYTES = 4L * VectorWidth.LANES;

    private VectorShapes() {
    }
}
