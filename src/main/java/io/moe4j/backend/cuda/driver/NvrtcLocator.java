package io.moe4j.backend.cuda.driver;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Finds {@code libnvrtc.so*}. NVRTC is not part of the driver: it comes with a CUDA toolkit, or with the pip
 * package {@code nvidia-cuda-nvrtc} (under {@code site-packages/nvidia/cuda_nvrtc/lib} or, from CUDA 13,
 * {@code site-packages/nvidia/cu13/lib}), and is often not on the loader path. The search, in order:
 * <ol>
 *   <li>an explicit file: system property {@code moe4j.cuda.nvrtc} or environment variable {@code MOE4J_NVRTC};</li>
 *   <li>the directories of a {@link LibrarySearch} with the roots {@code $CUDA_HOME} and {@code $CUDA_PATH}: CUDA
 *       installs, {@code LD_LIBRARY_PATH}, then the pip packages' lib directories in the Python environments;</li>
 *   <li>the loader's own search by soname (libnvrtc.so.13, .12, .11, plain).</li>
 * </ol>
 * Within a directory the highest version wins. The result says where it looked when nothing is found.
 */
public final class NvrtcLocator {
    /** libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12.4.99 — but not libnvrtc-builtins or libnvrtc.alt. */
    private static final Pattern LIBRARY = Pattern.compile("libnvrtc\\.so(\\.\\d+)*");
    static final List<String> SONAMES = List.of("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so");
    private static final List<String> ROOTS = List.of("CUDA_HOME", "CUDA_PATH");
    private static final List<String> PIP_LIBRARIES = List.of("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib");

    private final LibrarySearch search;
    private final Optional<String> explicit;

    /** Searches with {@code env} and the JVM's {@code user.home}. */
    public NvrtcLocator(Map<String, String> env, Optional<String> explicit) {
        this(env, explicit, Optional.ofNullable(System.getProperty("user.home")));
    }

    public NvrtcLocator(Map<String, String> env, Optional<String> explicit, Optional<String> home) {
        this.search = new LibrarySearch(env, home);
        this.explicit = explicit;
    }

    public static NvrtcLocator fromSystem() {
        return new NvrtcLocator(System.getenv(), LibrarySearch.explicitChoice("moe4j.cuda.nvrtc", "MOE4J_NVRTC"));
    }

    /** Candidates in order of preference: files found on disk first, then sonames for the loader to try. */
    public List<LibraryCandidate> candidates() {
        if (explicit.isPresent()) {
            // An explicit choice is the only candidate: falling back to another NVRTC would hide a wrong setting.
            return List.of(LibraryCandidate.named(explicit.get()));
        }
        List<LibraryCandidate> out = new ArrayList<>();
        for (Path dir : searchDirectories()) {
            newestIn(dir).ifPresent(p -> out.add(LibraryCandidate.file(p)));
        }
        for (String soname : SONAMES) {
            out.add(LibraryCandidate.loader(soname));
        }
        return out;
    }

    /** The directories searched for a library file, existing ones only, for messages and tests. */
    public List<Path> searchDirectories() {
        return search.directories(ROOTS, PIP_LIBRARIES);
    }

    static Optional<Path> newestIn(Path dir) {
        List<Path> found = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir, "libnvrtc.so*")) {
            for (Path p : stream) {
                if (LIBRARY.matcher(p.getFileName().toString()).matches() && Files.isReadable(p)) {
                    found.add(p);
                }
            }
        } catch (IOException | SecurityException e) {
            return Optional.empty();
        }
        return found.stream().max(Comparator.comparing(NvrtcLocator::versionKey));
    }

    /** Orders libnvrtc.so < libnvrtc.so.12 < libnvrtc.so.13 < libnvrtc.so.13.0.88 by their numeric parts. */
    private static String versionKey(Path p) {
        String name = p.getFileName().toString().substring("libnvrtc.so".length());
        StringBuilder key = new StringBuilder();
        for (String part : name.split("\\.")) {
            if (!part.isEmpty()) {
                key.append(String.format("%08d.", Long.parseLong(part)));
            }
        }
        return key.toString();
    }
}
