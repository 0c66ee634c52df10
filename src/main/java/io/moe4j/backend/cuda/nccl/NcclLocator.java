package io.moe4j.backend.cuda.nccl;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Finds {@code libnccl.so.2}. NCCL is neither part of the driver nor of every CUDA toolkit: it comes from the
 * distribution's {@code libnccl2} package (on the loader path), from an NCCL tarball ({@code $NCCL_HOME/lib}), or
 * with PyTorch as the pip package {@code nvidia-nccl-cu12}/{@code -cu13} under
 * {@code site-packages/nvidia/nccl/lib}, which is not on the loader path. The search, in order:
 * <ol>
 *   <li>an explicit file: system property {@code moe4j.cuda.nccl} or environment variable {@code MOE4J_NCCL};</li>
 *   <li>{@code $NCCL_HOME}, {@code $CUDA_HOME}, {@code $CUDA_PATH}, {@code /usr/local/cuda}, {@code /usr/local/cuda-*}:
 *       their lib64 and lib;</li>
 *   <li>each directory of {@code LD_LIBRARY_PATH};</li>
 *   <li>{@code nvidia/nccl/lib} of the Python environments: {@code $VIRTUAL_ENV}, {@code $CONDA_PREFIX}, the system
 *       and {@code /usr/local} Pythons, {@code /opt/*} (and their {@code .venv}), {@code ~/.local};</li>
 *   <li>the loader's own search by soname.</li>
 * </ol>
 * The result says where it looked when nothing is found.
 */
public final class NcclLocator {
    /** NCCL 2's soname; the major version is the ABI this binding is written against. */
    public static final String SONAME = "libnccl.so.2";

    /** A located library: a file path, or the soname left to the dynamic loader. */
    public record Candidate(Optional<Path> path, String soname) {
        public String describe() {
            return path.map(Path::toString).orElse(soname + " (loader search)");
        }
    }

    private final Map<String, String> env;
    private final Optional<String> explicit;
    private final Optional<String> home;

    public NcclLocator(Map<String, String> env, Optional<String> explicit, Optional<String> home) {
        this.env = env;
        this.explicit = explicit;
        this.home = home;
    }

    public static NcclLocator fromSystem() {
        String property = System.getProperty("moe4j.cuda.nccl");
        String variable = System.getenv("MOE4J_NCCL");
        return new NcclLocator(System.getenv(),
                Optional.ofNullable(property != null ? property : variable).filter(s -> !s.isBlank()),
                Optional.ofNullable(System.getProperty("user.home")));
    }

    /** Candidates in order of preference: files found on disk first, then the soname for the loader to try. */
    public List<Candidate> candidates() {
        List<Candidate> out = new ArrayList<>();
        if (explicit.isPresent()) {
            // An explicit choice is the only candidate: falling back to another NCCL would hide a wrong setting.
            out.add(new Candidate(Optional.of(Path.of(explicit.get())), explicit.get()));
            return out;
        }
        for (Path dir : searchDirectories()) {
            Path lib = dir.resolve(SONAME);
            if (Files.isReadable(lib)) {
                out.add(new Candidate(Optional.of(lib), SONAME));
            }
        }
        out.add(new Candidate(Optional.empty(), SONAME));
        return out;
    }

    /** The directories searched for {@code libnccl.so.2}, existing ones only, for messages and tests. */
    public List<Path> searchDirectories() {
        Set<Path> dirs = new LinkedHashSet<>();
        for (String var : List.of("NCCL_HOME", "CUDA_HOME", "CUDA_PATH")) {
            String root = env.get(var);
            if (root != null && !root.isBlank()) {
                dirs.add(Path.of(root, "lib64"));
                dirs.add(Path.of(root, "lib"));
            }
        }
        dirs.add(Path.of("/usr/local/cuda/lib64"));
        dirs.add(Path.of("/usr/local/cuda/lib"));
        for (Path versioned : glob(Path.of("/usr/local"), "cuda-*")) {
            dirs.add(versioned.resolve("lib64"));
            dirs.add(versioned.resolve("lib"));
        }
        String ld = env.get("LD_LIBRARY_PATH");
        if (ld != null) {
            for (String part : ld.split(":")) {
                if (!part.isBlank()) {
                    dirs.add(Path.of(part));
                }
            }
        }
        for (Path sitePackages : sitePackageDirs()) {
            dirs.add(sitePackages.resolve("nvidia/nccl/lib"));
        }
        dirs.removeIf(d -> !Files.isDirectory(d));
        return List.copyOf(dirs);
    }

    private List<Path> sitePackageDirs() {
        List<Path> prefixes = new ArrayList<>();
        for (String var : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
            String p = env.get(var);
            if (p != null && !p.isBlank()) {
                prefixes.add(Path.of(p));
            }
        }
        prefixes.add(Path.of("/usr"));
        prefixes.add(Path.of("/usr/local"));
        for (Path opt : glob(Path.of("/opt"), "*")) {
            prefixes.add(opt);
            prefixes.add(opt.resolve(".venv"));
        }
        home.ifPresent(h -> prefixes.add(Path.of(h, ".local")));
        List<Path> out = new ArrayList<>();
        for (Path prefix : prefixes) {
            for (Path python : glob(prefix.resolve("lib"), "python3*")) {
                out.add(python.resolve("site-packages"));
                out.add(python.resolve("dist-packages"));
            }
        }
        return out;
    }

    private static List<Path> glob(Path dir, String pattern) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir, pattern)) {
            stream.forEach(out::add);
        } catch (IOException | SecurityException e) {
            return List.of();
        }
        out.sort(Comparator.naturalOrder());
        return out;
    }
}
