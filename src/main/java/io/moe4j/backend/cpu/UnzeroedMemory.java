package io.moe4j.backend.cpu;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Off-heap memory that is not zeroed first, for buffers whose every byte the caller writes before any is read (the
 * packed panels). {@link Arena#allocate} zeroes what it hands out, one extra pass over memory on a single thread
 * before the parallel packing overwrites it (the packing threads then take the page faults instead). On the 2-core
 * development VM, loading gpt-oss-20b's 4-layer cut took 5.8-15.6 s with zeroed memory and 4.4-4.6 s without, a
 * qwen3-30b-a3b FP8 cut 22.3-29.2 s against 13.8-16.3 (alternated runs, docs/cpu.md). The memory comes from the C
 * library's {@code posix_memalign} and goes back through {@code free} when the arena closes; where the C library has
 * no {@code posix_memalign}, or the JVM runs without native access for this module, {@link Arena#allocate} serves.
 */
final class UnzeroedMemory {
    private static final MethodHandle MEMALIGN;
    private static final MethodHandle FREE;

    static {
        // Without native access for this module (the README's --enable-native-access, or the jar's manifest) the
        // calls below would warn; Arena.allocate serves then.
        boolean allowed = UnzeroedMemory.class.getModule().isNativeAccessEnabled();
        Linker linker = Linker.nativeLinker();
        var libc = linker.defaultLookup();
        var memalign = libc.find("posix_memalign");
        var free = libc.find("free");
        if (allowed && memalign.isPresent() && free.isPresent()) {
            MEMALIGN = linker.downcallHandle(memalign.get(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
            FREE = linker.downcallHandle(free.get(), FunctionDescriptor.ofVoid(ADDRESS));
        } else {
            MEMALIGN = null;
            FREE = null;
        }
    }

    private UnzeroedMemory() {
    }

    /** {@code bytes} of unspecified contents aligned to {@code alignment} (a power of two), freed with the arena. */
    static MemorySegment allocate(Arena arena, long bytes, long alignment) {
        if (MEMALIGN == null || bytes == 0) {
            return arena.allocate(bytes, alignment);
        }
        long align = Math.max(alignment, ADDRESS.byteSize()); // posix_memalign needs a multiple of sizeof(void *)
        try (Arena call = Arena.ofConfined()) {
            MemorySegment out = call.allocate(ADDRESS);
            int status = (int) MEMALIGN.invokeExact(out, align, bytes);
            if (status != 0) {
                throw new OutOfMemoryError("posix_memalign of " + bytes + " bytes failed with error " + status);
            }
            return out.get(ADDRESS, 0).reinterpret(bytes, arena, UnzeroedMemory::free);
        } catch (OutOfMemoryError | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("posix_memalign failed", t);
        }
    }

    private static void free(MemorySegment segment) {
        try {
            FREE.invokeExact(segment);
        } catch (Throwable t) {
            throw new IllegalStateException("free failed", t);
        }
    }
}
