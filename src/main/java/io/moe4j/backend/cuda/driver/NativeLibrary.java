package io.moe4j.backend.cuda.driver;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * One dlopen'ed shared library and the downcall handles made from it. Loaded into the global arena on purpose:
 * the CUDA driver and NVRTC keep process-wide state, and unloading them while handles exist would crash.
 */
final class NativeLibrary {
    private static final Linker LINKER = Linker.nativeLinker();

    private final String name;
    private final SymbolLookup lookup;

    private NativeLibrary(String name, SymbolLookup lookup) {
        this.name = name;
        this.lookup = lookup;
    }

    /** Opens a library by soname through the dynamic loader's own search (ld.so.cache, LD_LIBRARY_PATH). */
    static NativeLibrary bySoname(String soname) {
        return new NativeLibrary(soname, SymbolLookup.libraryLookup(soname, Arena.global()));
    }

    /** Opens a located library; it is named by its path, or by its soname where the loader finds it. */
    static NativeLibrary open(LibraryCandidate candidate) {
        return new NativeLibrary(candidate.path().map(Path::toString).orElse(candidate.soname()), candidate.open());
    }

    String name() {
        return name;
    }

    Optional<MemorySegment> find(String symbol) {
        return lookup.find(symbol);
    }

    /** A downcall for the first of {@code symbols} the library exports (newer ABI versions first). */
    MethodHandle function(FunctionDescriptor descriptor, String... symbols) {
        for (String symbol : symbols) {
            Optional<MemorySegment> address = lookup.find(symbol);
            if (address.isPresent()) {
                return LINKER.downcallHandle(address.get(), descriptor);
            }
        }
        throw new CudaException(symbols[0], -1, name + " exports none of " + String.join(", ", symbols));
    }

    /** A downcall for {@code symbol}, or null where the library does not export it (an older driver). */
    MethodHandle optionalFunction(FunctionDescriptor descriptor, String symbol) {
        return lookup.find(symbol).map(a -> LINKER.downcallHandle(a, descriptor)).orElse(null);
    }

    /** Turns what a downcall threw into an unchecked exception without wrapping errors twice. */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new CudaException("native call failed: " + t, t);
    }
}
