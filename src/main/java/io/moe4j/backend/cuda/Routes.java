package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The (expert, activation row) pairs of one grouped GEMV, packed as the kernels read them: int2 per pair. For the
 * first expert GEMM of a layer the activation row is the token; for the second it is the pair itself (the
 * intermediate of that pair).
 */
public final class Routes {
    private Routes() {
    }

    /**
     * Packs {@code experts[p]} and {@code rows[p]} after checking each against the stack's expert count and the
     * activation rows: the kernels trust these indices, so they are validated here, once, on the host.
     */
    public static MemorySegment pack(Arena arena, int[] experts, int[] rows, int expertCount, int activationRows) {
        if (experts.length != rows.length) {
            throw new IllegalArgumentException(experts.length + " experts for " + rows.length + " rows");
        }
        MemorySegment out = arena.allocate(JAVA_INT, Math.max(2, 2L * experts.length));
        for (int p = 0; p < experts.length; p++) {
            if (experts[p] < 0 || experts[p] >= expertCount) {
                throw new IllegalArgumentException("pair " + p + ": expert " + experts[p] + " not in [0, " + expertCount + ")");
            }
            if (rows[p] < 0 || rows[p] >= activationRows) {
                throw new IllegalArgumentException("pair " + p + ": row " + rows[p] + " not in [0, " + activationRows + ")");
            }
            out.setAtIndex(JAVA_INT, 2L * p, experts[p]);
            out.setAtIndex(JAVA_INT, 2L * p + 1, rows[p]);
        }
        return out;
    }

    /** Bytes of a packed route list of {@code pairs} pairs. */
    public static long bytes(int pairs) {
        return 8L * pairs;
    }
}
