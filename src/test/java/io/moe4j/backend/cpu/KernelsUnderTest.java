package io.moe4j.backend.cpu;

import java.util.ArrayList;
import java.util.List;

/** The kernel sets a test runs: always the scalar ones, and the vector ones where this JVM can run them. */
final class KernelsUnderTest {
    private KernelsUnderTest() {
    }

    static List<String> names() {
        List<String> l = new ArrayList<>(List.of("scalar"));
        if (KernelSelection.vectorUnavailable(io.moe4j.backend.PlatformProbe.probeReal().vectorBitSize()).isEmpty()) {
            l.add("vector");
        }
        return l;
    }

    static CpuKernels get(String name) {
        return switch (name) {
            case "scalar" -> new ScalarKernels();
            case "vector" -> {
                try {
                    yield (CpuKernels) Class.forName("io.moe4j.backend.cpu.VectorKernels").getDeclaredConstructor()
                            .newInstance();
                } catch (ReflectiveOperationException e) {
                    throw new AssertionError("vector kernels failed to load", e);
                }
            }
            default -> throw new IllegalArgumentException(name);
        };
    }
}
