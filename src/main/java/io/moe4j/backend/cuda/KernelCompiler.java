package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaDevice;
import io.moe4j.backend.cuda.driver.CudaException;
import io.moe4j.backend.cuda.driver.Nvrtc;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Compiles kernel sources with NVRTC for one device and caches the CUBINs on disk, keyed by the SHA-256 of
 * everything that changes the output: NVRTC's version, the target architecture, the options, the source and its
 * headers. The cache lives in {@code -Dmoe4j.cuda.cache}, else {@code $XDG_CACHE_HOME/moe4j/cuda}, else
 * {@code ~/.cache/moe4j/cuda}; a cache that cannot be written is reported once and compiling goes on without it.
 */
public final class KernelCompiler {
    private static final System.Logger LOG = System.getLogger(KernelCompiler.class.getName());

    private final Nvrtc nvrtc;
    private final CudaDevice device;
    private final Optional<Path> cacheDir;

    public KernelCompiler(Nvrtc nvrtc, CudaDevice device, Optional<Path> cacheDir) {
        this.nvrtc = nvrtc;
        this.device = device;
        this.cacheDir = cacheDir;
    }

    public static KernelCompiler forDevice(CudaDevice device) {
        return new KernelCompiler(Nvrtc.get(), device, Optional.of(defaultCacheDir()));
    }

    static Path defaultCacheDir() {
        String property = System.getProperty("moe4j.cuda.cache");
        if (property != null && !property.isBlank()) {
            return Path.of(property);
        }
        String xdg = System.getenv("XDG_CACHE_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("moe4j").resolve("cuda");
    }

    /** The full NVRTC option list for {@code source} on this device. */
    public List<String> options(KernelSource source) {
        List<String> options = new ArrayList<>();
        options.add("--gpu-architecture=" + device.nvrtcArchitecture());
        options.add("--std=c++17");
        // Kernels rely on exact IEEE float arithmetic (subnormal inputs in the 4-bit decoders): no fast math, no
        // flush-to-zero; fused multiply-add stays on, it only makes the dot products more accurate.
        options.add("--ftz=false");
        options.add("--prec-div=true");
        options.add("--fmad=true");
        options.addAll(source.options());
        return options;
    }

    /** CUBIN for {@code source}, from the cache when present. */
    public byte[] compile(KernelSource source) {
        List<String> options = options(source);
        String key = cacheKey(source, options);
        Optional<Path> cached = cacheDir.map(d -> d.resolve(key + ".cubin"));
        if (cached.isPresent() && Files.isRegularFile(cached.get())) {
            try {
                return Files.readAllBytes(cached.get());
            } catch (IOException e) {
                LOG.log(Level.WARNING, "unreadable kernel cache entry " + cached.get() + ", recompiling: " + e);
            }
        }
        Nvrtc.Output out = nvrtc.compile(source.name(), source.text(), source.headers(), options);
        if (!out.cubin()) {
            throw new CudaException("nvrtcGetCUBIN", -1, "expected a CUBIN for " + device.nvrtcArchitecture());
        }
        if (!out.log().isEmpty()) {
            LOG.log(Level.DEBUG, "NVRTC log for " + source.name() + ": " + out.log());
        }
        cached.ifPresent(path -> store(path, out.image()));
        return out.image();
    }

    private void store(Path path, byte[] image) {
        try {
            Files.createDirectories(path.getParent());
            Path tmp = Files.createTempFile(path.getParent(), "kernel", ".tmp");
            Files.write(tmp, image);
            try {
                Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException | SecurityException e) {
            LOG.log(Level.WARNING, "kernel cache " + path.getParent() + " not writable; compiling without it: " + e);
        }
    }

    private String cacheKey(KernelSource source, List<String> options) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            update(sha, "nvrtc " + nvrtc.version());
            update(sha, String.join("\u0000", options));
            update(sha, source.name());
            update(sha, source.text());
            for (Map.Entry<String, String> h : new TreeMap<>(source.headers()).entrySet()) {
                update(sha, h.getKey());
                update(sha, h.getValue());
            }
            return HexFormat.of().formatHex(sha.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is a required JDK algorithm", e);
        }
    }

    private static void update(MessageDigest sha, String part) {
        byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
        sha.update((byte) (bytes.length >>> 24));
        sha.update((byte) (bytes.length >>> 16));
        sha.update((byte) (bytes.length >>> 8));
        sha.update((byte) bytes.length);
        sha.update(bytes);
    }
}
