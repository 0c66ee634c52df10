package io.moe4j.backend.cpu;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether the kernels decode FP8 codes by byte permutes: a 128-entry byte lookup is one instruction (vpermi2b) where
 * the kernels run at 512 bits on a CPU with AVX-512 VBMI; without VBMI the JIT does not compile a byte permute of two
 * 64-byte vectors to instructions, and at 256 bits two vectors hold only 64 entries. The system property
 * {@value #PROPERTY} ({@code true} or {@code false}) forces the choice, for tests of both decodes on one machine
 * ({@code true} only with 512-bit kernels; on a 512-bit machine without VBMI it runs correctly but very slowly).
 */
final class BytePermutes {
    static final String PROPERTY = "moe4j.cpu.bytePermutes";
    /** Whether the FP8 slots are decoded by byte lookups ({@link SlotDecode#fp8E4m3}). */
    static final boolean FAST = choose(System.getProperty(PROPERTY), VectorWidth.BITS, vbmi(Path.of("/proc/cpuinfo")));

    private BytePermutes() {
    }

    static boolean choose(String forced, int bits, boolean vbmi) {
        if (forced != null && !forced.isBlank()) {
            return switch (forced.trim()) {
                case "true" -> {
                    // Two 256-bit vectors hold half of a table: the lookups would read wrong entries.
                    if (bits < 512) {
                        throw new IllegalArgumentException("-D" + PROPERTY + "=true needs 512-bit kernels, not "
                                + bits + " (-D" + VectorWidth.PROPERTY + ")");
                    }
                    yield true;
                }
                case "false" -> false;
                default -> throw new IllegalArgumentException("-D" + PROPERTY + "=" + forced + ": expected true or false");
            };
        }
        return bits >= 512 && vbmi;
    }

    /** Whether the first "flags" line of a /proc/cpuinfo file names avx512vbmi (false when unreadable). */
    static boolean vbmi(Path cpuinfo) {
        try {
            if (!Files.isReadable(cpuinfo)) {
                return false;
            }
            for (String line : Files.readAllLines(cpuinfo)) {
                if (line.startsWith("flags")) {
                    return java.util.List.of(line.substring(line.indexOf(':') + 1).trim().split("\\s+"))
                            .contains("avx512vbmi");
                }
            }
            return false;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }
}
