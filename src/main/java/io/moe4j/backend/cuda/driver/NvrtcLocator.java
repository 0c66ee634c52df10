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
import java.util.regex.Pattern;

/**
 * Finds {@code libnvrtc.so*}. NVRTC is not part of the driver: it comes with a CUDA toolkit, or with the pip
 * package {@code nvidia-cuda-nvrtc} (under {@code site-packages/nvidia/cuda_nvrtc/lib} or, from CUDA 13,
 * {@code site-packages/nvidia/cu13/lib}), and is often not on the loader path. The search, in order:
 * <ol>
 *   <li>an explicit file: system property {@code moe4j.cuda.nvrtc} or environment variable {@code MOE4J_NVRTC};</li>
 *   <li>{@code $CUDA_HOME}, {@code $CUDA_PATH}, {@code /usr/local/cuda}, {@code /usr/local/cuda-*}: their lib64 and lib;</li>
 *   <li>each directory of {@code LD_LIBRARY_PATH};</li>
 *   <li>the nvidia pip packages' lib directories under the usual Python prefixes (and {@code /opt/*}/.venv);</li>
 *   <li>the loader's own search by soname (libnvrtc.so.13, .12, .11, plain).</li>
 * </ol>
 * Within a directory the highest version wins. The result says where it looked when nothing is found.
 */
public final class NvrtcLocator {
    /** libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12.4.99 — but not libnvrtc-builtins or libnvrtc.alt. */
    private static final Pattern LIBRARY = Pattern.compile("libnvrtc\\.so(\\.\\d+)*");
    static final List<String> SONAMES = List.of("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so");

    /** A located library: a file path, or a soname left to the dynamic loader. */
    public record Candidate(Optional<Path> path, String soname) {
        public String describe() {
            return path.map(Path::toString).orElse(soname + " (loader search)");
        }
    }

    private final Map<String, String> env;
    private final Optional<String> explicit;

    public NvrtcLocator(Map<String, String> env, Optional<String> explicit) {
        this.env = env;
        this.explicit = explicit;
    }

    public static NvrtcLocator fromSystem() {
        String property = System.getProperty("moe4j.cuda.nvrtc");
        String variable = System.getenv("MOE4J_NVRTC");
        return new NvrtcLocator(System.getenv(),
                Optional.ofNullable(property != null ? property : variable).filter(s -> !s.isBlank()));
    }

    /** Candidates in order of preference: files found on disk first, then sonames for the loader to try. */
    public List<Candidate> candidates() {
        List<Candidate> out = new ArrayList<>();
        if (explicit.isPresent()) {
            // An explicit choice is the only candidate: falling back to another NVRTC would hide a wrong setting.
            out.add(new Candidate(Optional.of(Path.of(explicit.get())), explicit.get()));
            return out;
        }
        for (Path dir : searchDirectories()) {
            newestIn(dir).ifPresent(p -> out.add(new Candidate(Optional.of(p), p.getFileName().toString())));
        }
        for (String soname : SONAMES) {
            out.add(new Candidate(Optional.empty(), soname));
        }
        return out;
    }

    /** The directories searched for a library file, for messages and tests. */
    public List<Path> searchDirectories() {
        Set<Path> dirs = new LinkedHashSet<>();
        for (String var : List.of("CUDA_HOME", "CUDA_PATH")) {
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
            dirs.add(sitePackages.resolve("nvidia/cu13/lib"));
            dirs.add(sitePackages.resolve("nvidia/cuda_nvrtc/lib"));
        }
        dirs.removeIf(d -> !Files.isDirectory(d));
        return List.copyOf(dirs);
    }

    private static List<Path> sitePackageDirs() {
        List<Path> roots = new ArrayList<>();
        for (Path prefix : List.of(Path.of("/usr/lib"), Path.of("/usr/local/lib"))) {
            roots.addAll(glob(prefix, "python3*"));
        }
        for (Path opt : glob(Path.of("/opt"), "*")) {
            roots.addAll(glob(opt.resolve(".venv/lib"), "python3*"));
            roots.addAll(glob(opt.resolve("lib"), "python3*"));
        }
        String home = System.getProperty("user.home");
        if (home != null) {
            roots.addAll(glob(Path.of(home, ".local/lib"), "python3*"));
        }
        List<Path> out = new ArrayList<>();
        for (Path root : roots) {
            out.add(root.resolve("site-packages"));
            out.add(root.resolve("dist-packages"));
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
