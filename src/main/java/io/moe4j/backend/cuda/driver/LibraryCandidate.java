package io.moe4j.backend.cuda.driver;

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

    public String describe() {
        return path.map(Path::toString).orElse(soname + " (loader search)");
    }
}
