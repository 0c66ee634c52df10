package io.moe4j.backend.cpu;

import io.moe4j.MoeException;
import io.moe4j.backend.Platform;

/**
 * The width the vector kernels run at, fixed once per JVM: the panel layout ({@link PanelMatrix#LANES} rows a
 * panel, one per lane) and every kernel species follow it, so that one code path serves AVX2 (256 bits, 8 lanes)
 * and AVX-512 (512 bits, 16 lanes), as Lucene's vectorization provider picks its species once. It is a constant
 * so that the JIT sees constant species and lane counts, which it needs to compile the Vector API to instructions.
 *
 * <p>By default the machine's preferred width when that is 512 bits or more, else 256. The system property
 * {@value #PROPERTY} ({@code 256} or {@code 512}) forces one, for tests of both shapes on one machine; 512 bits
 * forced on a machine without AVX-512 run correctly but very slowly (the JVM does not compile such vectors to
 * instructions).
 */
final class VectorWidth {
    static final String PROPERTY = "moe4j.cpu.vectorBits";
    /** The vector bits of the kernels: 256 or 512. */
    static final int BITS = choose(System.getProperty(PROPERTY), preferredBits());
    /** 32-bit lanes a vector: the rows of a panel. */
    static final int LANES = BITS / 32;

    private VectorWidth() {
    }

    /** The width for a property value (null or blank: not set) on a machine whose preferred width is given. */
    static int choose(String forced, int preferredBits) {
        if (forced == null || forced.isBlank()) {
            return preferredBits >= 512 ? 512 : 256;
        }
        return switch (forced.trim()) {
            case "256" -> 256;
            case "512" -> 512;
            default -> throw new MoeException("-D" + PROPERTY + "=" + forced + ": expected 256 or 512");
        };
    }

    /** Whether {@value #PROPERTY} forces the width. */
    static boolean forced() {
        String p = System.getProperty(PROPERTY);
        return p != null && !p.isBlank();
    }

    private static int preferredBits() {
        Platform p = io.moe4j.backend.PlatformProbe.probeReal();
        return p.vectorApi() ? p.vectorBitSize() : 0;
    }
}
