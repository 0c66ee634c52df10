package io.moe4j.backend.cuda.driver;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.Optional;

/** A place to load a native library from: a file path, or a soname left to the dynamic loader's own search. */
public record LibraryCandidate(Optional<Path> path, String soname) {

    /** A file on disk. */
    public static LibraryCandidate file(Path path) {
        return new LibraryCandidate(Optional.of(path), path.getFileName().toString());
    }

    /** A file the user named; it keeps the name as given, for messages. */
    public static LibraryCandidate named(String file) {
        return new LibraryCandidate(Optional.of(Path.of(file)), file);
    }

    /** A soname for the loader to resolve. */
    public static LibraryCandidate loader(String soname) {
        return new LibraryCandidate(Optional.empty(), soname);
    }

    /**
     * dlopens it into the global arena, on purpose: NVIDIA's libraries keep process-wide state (contexts, proxy
     * threads), and unloading one while handles into it exist would crash.
     *
     * @throws IllegalArgumentException when the loader cannot open it
     */
    public SymbolLookup open() {
        return path.isPresent() ? SymbolLookup.libraryLookup(path.get(), Arena.global())
                : SymbolLookup.libraryLookup(soname, Arena.global());
    }

    public String describe() {
        return path.map(Path::toString).orElse(soname + " (loader search)");
    }
}
