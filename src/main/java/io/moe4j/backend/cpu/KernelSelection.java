package io.moe4j.backend.cpu;

import io.moe4j.MoeException;
import io.moe4j.backend.Platform;

import java.util.Optional;

/**
 * Chooses the kernels of this JVM (Lucene's vectorization-provider pattern): the Vector API ones after a probe,
 * else the scalar ones. The system property {@value #PROPERTY} forces a choice: {@code true} the scalar kernels,
 * {@code false} the vector kernels, and forcing the vector kernels where they cannot run is an error, never a
 * silent fallback.
 */
final class KernelSelection {
    static final String PROPERTY = "moe4j.cpu.scalar";
    /** Narrower vectors would make the 8- or 16-lane panels span several registers the JIT may not map to hardware. */
    static final int MIN_VECTOR_BITS = 256;
    private static final String VECTOR_CLASS = "io.moe4j.backend.cpu.VectorKernels";
    private static final String INT8_CLASS = "io.moe4j.backend.cpu.Int8Kernels";

    private KernelSelection() {
    }

    /** The kernels to use on this JVM, honouring {@value #PROPERTY}. */
    static CpuKernels select() {
        String forced = System.getProperty(PROPERTY);
        if (forced != null && !forced.isBlank()) {
            if (Boolean.parseBoolean(forced.trim())) {
                return new ScalarKernels();
            }
            if (!forced.trim().equalsIgnoreCase("false")) {
                throw new MoeException("-D" + PROPERTY + "=" + forced + ": expected true or false");
            }
            return vector().orElseThrow(() -> new MoeException("-D" + PROPERTY + "=false forces the Vector API "
                    + "kernels, but " + vectorUnavailable(platformBits()).orElse("they failed to load")));
        }
        return vector().orElseGet(ScalarKernels::new);
    }

    /** Why the vector kernels cannot run on a platform with this preferred vector width, or empty if they can. */
    static Optional<String> vectorUnavailable(int preferredBits) {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            return Optional.of("the JVM runs without jdk.incubator.vector (start it with --add-modules "
                    + "jdk.incubator.vector)");
        }
        if (preferredBits < MIN_VECTOR_BITS) {
            return Optional.of("the preferred vector species is " + preferredBits + " bits, under the "
                    + MIN_VECTOR_BITS + " the kernels are written for");
        }
        return Optional.empty();
    }

    /** Whether {@value #PROPERTY} asks for the scalar kernels. */
    static boolean scalarForced() {
        return Boolean.parseBoolean(System.getProperty(PROPERTY, "false").trim());
    }

    /**
     * The int8-activation kernels over {@code floatKernels} (the vector kernels, which keep the activation between
     * the GEMMs), loaded by name for the same reason as {@code VectorKernels}.
     */
    static CpuKernels int8(CpuKernels floatKernels) {
        try {
            return (CpuKernels) Class.forName(INT8_CLASS).getDeclaredConstructor(CpuKernels.class)
                    .newInstance(floatKernels);
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new MoeException("the int8-activation kernels failed to load: " + e, e);
        }
    }

    private static Optional<CpuKernels> vector() {
        if (vectorUnavailable(platformBits()).isPresent()) {
            return Optional.empty();
        }
        try {
            return Optional.of((CpuKernels) Class.forName(VECTOR_CLASS).getDeclaredConstructor().newInstance());
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new MoeException("the Vector API kernels failed to load: " + e, e);
        }
    }

    private static int platformBits() {
        Platform p = io.moe4j.backend.PlatformProbe.probeReal();
        return p.vectorApi() ? p.vectorBitSize() : 0;
    }
}
