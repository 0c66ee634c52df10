package io.moe4j.model;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The sum of a vector's lanes in one fixed order: the upper half of the lanes added to the lower half, again and again
 * until one lane is left. {@code reduceLanes(ADD)} leaves the order open, and it differs between the interpreter and
 * C2 (a scratch loop over 1,000 random 8-lane float vectors: 548 sums differed in the last bits before and after
 * compilation), so a session that ran before the JIT compiled the attention got other logits than the same session
 * after. Lane-wise adds and a lane permutation have one result wherever they run. For
 * {@link FloatVector#SPECIES_PREFERRED}, the species of the model's vector arithmetic.
 */
final class LaneSums {
    static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    // lane i takes lane i + L/2, then i + L/4, ...: fixed shuffles, so that C2 emits one permute each
    private static final VectorShuffle<Float> HALF = fold(L / 2);
    private static final VectorShuffle<Float> QUARTER = fold(L / 4);
    private static final VectorShuffle<Float> EIGHTH = fold(L / 8);
    private static final VectorShuffle<Float> SIXTEENTH = fold(L / 16);

    private LaneSums() {
    }

    private static VectorShuffle<Float> fold(int distance) {
        int d = Math.max(distance, 1);
        return VectorShuffle.fromOp(S, i -> (i + d) % L);
    }

    /** The lanes' sum, folded by halves: the same float for the same lanes, compiled or not. */
    static float sum(FloatVector v) {
        if (L >= 2) {
            v = v.add(v.rearrange(HALF));
        }
        if (L >= 4) {
            v = v.add(v.rearrange(QUARTER));
        }
        if (L >= 8) {
            v = v.add(v.rearrange(EIGHTH));
        }
        if (L >= 16) {
            v = v.add(v.rearrange(SIXTEENTH));
        }
        for (int d = L / 32; d >= 1; d /= 2) { // vectors of more than 16 floats (none on x86)
            v = v.add(v.rearrange(fold(d)));
        }
        return v.lane(0);
    }
}
