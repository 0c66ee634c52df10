package io.moe4j.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.function.Supplier;

/**
 * Whether a computation gives the same bits before and after the JIT has compiled it: its first run (interpreted,
 * or compiled by C1) against its last after {@code rounds} more (by then C2's). Code whose result depends on how it
 * was compiled (the Vector API's lane reductions and transcendental lanes) fails this; on a JVM that never compiles
 * it passes without proving anything, and it never fails falsely.
 */
public final class JitStability {
    private JitStability() {
    }

    public static void assertSameBitsAfterCompilation(Supplier<float[]> compute, int rounds) {
        float[] first = compute.get();
        float[] later = first;
        for (int round = 0; round < rounds; round++) {
            later = compute.get();
        }
        assertThat(later).hasSameSizeAs(first);
        for (int i = 0; i < first.length; i++) {
            assertThat(Float.floatToRawIntBits(later[i])).as("value %d: %s first, %s compiled", i, first[i], later[i])
                    .isEqualTo(Float.floatToRawIntBits(first[i]));
        }
    }
}
