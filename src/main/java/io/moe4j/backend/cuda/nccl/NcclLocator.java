package io.moe4j.backend.cuda.nccl;

import io.moe4j.backend.cuda.driver.LibraryCandidate;
import io.moe4j.backend.cuda.driver.LibrarySearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Finds {@code libnccl.so.2}. NCCL is neither part of the driver nor of every CUDA toolkit: it comes from the
 * distribution's {@code libnccl2} package (on the loader path), from an NCCL tarball ({@code $NCCL_HOME/lib}), or
 * with PyTorch as the pip package {@code nvidia-nccl-cu12}/{@code -cu13} under
 * {@code site-packages/nvidia/nccl/lib}, which is not on the loader path. The search, in order:
 * <ol>
 *   <li>an explicit file: system property {@code moe4j.cuda.nccl} or environment variable {@code MOE4J_NCCL};</li>
 *   <li>the directories of a {@link LibrarySearch} with the roots {@code $NCCL_HOME}, {@code $CUDA_HOME} and
 *       {@code $CUDA_PATH}: those and the CUDA installs, {@code LD_LIBRARY_PATH}, then {@code nvidia/nccl/lib} of
 *       the Python environments;</li>
 *   <li>the loader's own search by soname.</li>
 * </ol>
 * The result says where it looked when nothing is found.
 */
public final class NcclLocator {
    /** NCCL 2's soname; the major version is the ABI this binding is written against. */
    public static final String SONAME = "libnccl.so.2";
    private static final List<String> ROOTS = List.of("NCCL_HOME", "CUDA_HOME", "CUDA_PATH");
    private static final List<String> PIP_LIBRARIES = List.of("nvidia/nccl/lib");

    private final LibrarySearch search;
    private final Optional<String> explicit;

    public NcclLocator(Map<String, String> env, Optional<String> explicit, Optional<String> home) {
        this.search = new LibrarySearch(env, home);
        this.explicit = explicit;
    }

    public static NcclLocator fromSystem() {
        return new NcclLocator(System.getenv(), LibrarySearch.explicitChoice("moe4j.cuda.nccl", "MOE4J_NCCL"),
                Optional.ofNullable(System.getProperty("user.home")));
    }

    /** Candidates in order of preference: files found on disk first, then the soname for the loader to try. */
    public List<LibraryCandidate> candidates() {
        if (explicit.isPresent()) {
            // An explicit choice is the only candidate: falling back to another NCCL would hide a wrong setting.
            return List.of(LibraryCandidate.named(explicit.get()));
        }
        List<LibraryCandidate> out = new ArrayList<>();
        for (Path dir : searchDirectories()) {
            Path lib = dir.resolve(SONAME);
            if (Files.isReadable(lib)) {
                out.add(LibraryCandidate.file(lib));
            }
        }
        out.add(LibraryCandidate.loader(SONAME));
        return out;
    }

    /** The directories searched for {@code libnccl.so.2}, existing ones only, for messages and tests. */
    public List<Path> searchDirectories() {
        return search.directories(ROOTS, PIP_LIBRARIES);
    }
}
