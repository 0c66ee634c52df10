package io.moe4j.memory;

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
 * CPU's packed panels, a layer's concatenated expert codes). {@link Arena#allocate} zeroes what it hands out, one
 * extra pass over memory on a single thread before the caller overwrites it (the writing threads then take the page
 * faults instead). On the 2-core
 * development VM, loading gpt-oss-20b's 4-layer cut took 5.8-15.6 s with zeroed memory and 4.4-4.6 s without, a
 * qwen3-30b-a3b FP8 cut 22.3-29.2 s against 13.8-16.3 (alternated runs, docs/cpu.md). The memory comes from the C
 * library's {@code posix_memalign} and goes back through {@code free} when the arena closes; where the C library has
 * no {@code posix_memalign}, or the JVM runs without native access for this module, {@link Arena#allocate} serves.
 */
public final class UnzeroedMemory {
    private static final MethodHandle MEMALIGN;
    private static final MethodHandle FREE;
    /** {@code madvise}, or null where the C library has none (then no huge-page hint is given). */
    private static final MethodHandle MADVISE;
    /** Linux's MADV_HUGEPAGE: back the range with transparent huge pages where the kernel allows them. */
    private static final int MADV_HUGEPAGE = 14;
    /** The huge page size the hint aims at (x86-64 and most arm64 kernels), and the smallest allocation it is given. */
    public static final long HUGE_PAGE = 2L << 20;
    /** Whether large buffers ask for huge pages ({@code -Dmoe4j.cpu.hugePages}, default true; false for A/B runs). */
    private static final boolean HUGE_PAGES = Boolean.parseBoolean(System.getProperty("moe4j.cpu.hugePages", "true"));

    static {
        // Without native access for this module (the README's --enable-native-access, or the jar's manifest) the
        // calls below would warn; Arena.allocate serves then.
        boolean allowed = UnzeroedMemory.class.getModule().isNativeAccessEnabled();
        Linker linker = Linker.nativeLinker();
        var libc = linker.defaultLookup();
        var memalign = libc.find("posix_memalign");
        var free = libc.find("free");
        var madvise = libc.find("madvise");
        if (allowed && memalign.isPresent() && free.isPresent()) {
            MEMALIGN = linker.downcallHandle(memalign.get(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
            FREE = linker.downcallHandle(free.get(), FunctionDescriptor.ofVoid(ADDRESS));
            boolean linux = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux");
            MADVISE = linux && madvise.isPresent() && HUGE_PAGES ? linker.downcallHandle(madvise.get(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT)) : null;
        } else {
            MEMALIGN = null;
            FREE = null;
            MADVISE = null;
        }
    }

    private UnzeroedMemory() {
    }

    /** Whether allocations of {@link #HUGE_PAGE} bytes or more are huge-page aligned and hinted to the kernel. */
    public static boolean hintsHugePages() {
        return MADVISE != null;
    }

    /**
     * {@code bytes} of unspecified contents aligned to {@code alignment} (a power of two), freed with the arena. From
     * {@link #HUGE_PAGE} bytes on, the memory is aligned to huge pages and the kernel is asked to back it with them
     * ({@code madvise(MADV_HUGEPAGE)}, which matters where transparent huge pages are on "madvise" only): one page
     * fault per 2 MiB instead of per 4 KiB when the packing first writes it, and fewer TLB misses when the kernels
     * stream it.
     */
    public static MemorySegment allocate(Arena arena, long bytes, long alignment) {
        if (MEMALIGN == null || bytes == 0) {
            return arena.allocate(bytes, alignment);
        }
        boolean huge = MADVISE != null && bytes >= HUGE_PAGE;
        // posix_memalign needs a multiple of sizeof(void *); huge: whole huge pages, so the last one is ours alone
        long align = huge ? Math.max(alignment, HUGE_PAGE) : Math.max(alignment, ADDRESS.byteSize());
        long size = huge ? Math.ceilDiv(bytes, HUGE_PAGE) * HUGE_PAGE : bytes;
        try (Arena call = Arena.ofConfined()) {
            MemorySegment out = call.allocate(ADDRESS);
            int status = (int) MEMALIGN.invokeExact(out, align, size);
            if (status != 0) {
                throw new OutOfMemoryError("posix_memalign of " + size + " bytes failed with error " + status);
            }
            MemorySegment block = out.get(ADDRESS, 0);
            if (huge) {
                // a hint: where the kernel refuses it (huge pages off) the memory is plain pages, as before
                int ignored = (int) MADVISE.invokeExact(block, size, MADV_HUGEPAGE);
            }
            return block.reinterpret(bytes, arena, UnzeroedMemory::free);
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
