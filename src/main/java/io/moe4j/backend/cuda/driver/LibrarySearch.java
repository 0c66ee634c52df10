package io.moe4j.backend.cuda.driver;

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
 * Where NVIDIA libraries that are not part of the driver (NVRTC, NCCL) are looked for: they come with a CUDA
 * toolkit, a tarball named by an environment variable, or a pip package inside a Python environment, and are often
 * not on the loader path. The directories, in order:
 * <ol>
 *   <li>lib64 and lib of each root named by the caller's environment variables, then of {@code /usr/local/cuda} and
 *       {@code /usr/local/cuda-*};</li>
 *   <li>each directory of {@code LD_LIBRARY_PATH};</li>
 *   <li>the caller's pip library directories (such as {@code nvidia/nccl/lib}) in the site-packages and
 *       dist-packages of the Python environments: {@code $VIRTUAL_ENV}, {@code $CONDA_PREFIX}, the system and
 *       {@code /usr/local} Pythons, {@code /opt/*} (and their {@code .venv}), {@code ~/.local}.</li>
 * </ol>
 * Only directories that exist are listed. The environment and home directory are given, so tests can stage them.
 */
public final class LibrarySearch {
    private final Map<String, String> env;
    private final Optional<String> home;

    public LibrarySearch(Map<String, String> env, Optional<String> home) {
        this.env = env;
        this.home = home;
    }

    /**
     * The existing directories to search, each once, in order.
     *
     * @param rootVariables environment variables that name an install root (CUDA_HOME, NCCL_HOME, ...)
     * @param pipLibraries  library directories relative to site-packages (nvidia/nccl/lib, ...)
     */
    public List<Path> directories(List<String> rootVariables, List<String> pipLibraries) {
        Set<Path> dirs = new LinkedHashSet<>();
        List<Path> roots = new ArrayList<>();
        for (String var : rootVariables) {
            variable(var).ifPresent(root -> roots.add(Path.of(root)));
        }
        roots.add(Path.of("/usr/local/cuda"));
        roots.addAll(glob(Path.of("/usr/local"), "cuda-*"));
        for (Path root : roots) {
            dirs.add(root.resolve("lib64"));
            dirs.add(root.resolve("lib"));
        }
        for (String part : env.getOrDefault("LD_LIBRARY_PATH", "").split(":")) {
            if (!part.isBlank()) {
                dirs.add(Path.of(part));
            }
        }
        for (Path sitePackages : sitePackageDirs()) {
            for (String lib : pipLibraries) {
                dirs.add(sitePackages.resolve(lib));
            }
        }
        dirs.removeIf(d -> !Files.isDirectory(d));
        return List.copyOf(dirs);
    }

    private List<Path> sitePackageDirs() {
        List<Path> prefixes = new ArrayList<>();
        for (String var : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
            variable(var).ifPresent(p -> prefixes.add(Path.of(p)));
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

    /**
     * A library the user named explicitly: the system property, else the environment variable; empty when neither
     * is set or blank.
     */
    public static Optional<String> explicitChoice(String property, String variable) {
        String value = System.getProperty(property);
        if (value == null) {
            value = System.getenv(variable);
        }
        return Optional.ofNullable(value).filter(s -> !s.isBlank());
    }

    private Optional<String> variable(String name) {
        return Optional.ofNullable(env.get(name)).filter(v -> !v.isBlank());
    }

    /** The entries of {@code dir} matching a glob, sorted; none when it is missing or unreadable. */
    static List<Path> glob(Path dir, String pattern) {
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
