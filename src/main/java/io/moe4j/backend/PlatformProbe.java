package io.moe4j.backend;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.driver.CudaDevice;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Finds out what this machine offers the backends: CPU cores, whether the Vector API is usable and how wide, the
 * CPU's SIMD flags, and the CUDA devices (through {@code libcuda.so.1} with the Foreign Function & Memory API). It
 * never fails: whatever cannot be found is reported as absent, with the reason.
 *
 * <p>The system property {@code moe4j.platform} (or environment variable {@code MOE4J_PLATFORM}) poses as another
 * machine, for tests and demos: {@code cpu} (no GPU), {@code cpu-novector} (no GPU, no Vector API), {@code h100},
 * {@code h200} (this CPU plus one posed GPU). A posed platform says so in its device name and reasons.
 *
 * <p>The CUDA answer is the cuda backend's own probe ({@link CudaRuntime#probe()}: the driver, device 0 and NVRTC
 * wherever {@link io.moe4j.backend.cuda.driver.NvrtcLocator} finds it, pip wheels included), so the platform
 * report and the backend never disagree.
 */
public final class PlatformProbe {
    public static final String POSE_PROPERTY = "moe4j.platform";
    public static final String POSE_ENV = "MOE4J_PLATFORM";
    public static final List<String> POSES = List.of("cpu", "cpu-novector", "h100", "h200");

    /** The CPU flags worth reporting, as /proc/cpuinfo spells them. */
    static final List<String> INTERESTING_FLAGS = List.of("avx512f", "avx512bw", "avx512vl", "avx512_vnni",
            "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "avx2", "fma", "f16c", "asimd", "neon",
            "sve", "sve2");

    private static final String NO_DRIVER = "no CUDA driver (libcuda.so.1) found";

    private PlatformProbe() {
    }

    /** This machine, or the posed one when {@code moe4j.platform} / {@code MOE4J_PLATFORM} is set. */
    public static Platform probe() {
        Platform real = Real.PLATFORM;
        return activePose().map(p -> pose(p, real)).orElse(real);
    }

    /** This machine, whatever the pose (probed once per JVM). */
    public static Platform probeReal() {
        return Real.PLATFORM;
    }

    /** The pose asked for by the system property or the environment, validated. */
    public static Optional<String> activePose() {
        String v = System.getProperty(POSE_PROPERTY);
        String where = "-D" + POSE_PROPERTY;
        if (v == null || v.isBlank()) {
            v = System.getenv(POSE_ENV);
            where = POSE_ENV;
        }
        if (v == null || v.isBlank() || v.trim().equalsIgnoreCase("real") || v.trim().equalsIgnoreCase("auto")) {
            return Optional.empty();
        }
        String p = v.trim().toLowerCase(Locale.ROOT);
        if (!POSES.contains(p)) {
            throw new MoeException(where + "=" + v + ": unknown platform pose; choose " + String.join(", ", POSES));
        }
        return Optional.of(p);
    }

    /** {@code base} (usually this machine) posing as {@code pose}: the GPU replaced, the Vector API perhaps removed. */
    public static Platform pose(String pose, Platform base) {
        String note = " (posed: " + pose + ")";
        return switch (pose) {
            case "cpu" -> new Platform(base.cpuCores(), base.vectorApi(), base.vectorBitSize(), base.cpuFeatures(),
                    Platform.CudaInfo.none(NO_DRIVER + note));
            case "cpu-novector" -> new Platform(base.cpuCores(), false, 0, base.cpuFeatures(),
                    Platform.CudaInfo.none(NO_DRIVER + note));
            case "h100" -> new Platform(base.cpuCores(), base.vectorApi(), base.vectorBitSize(), base.cpuFeatures(),
                    new Platform.CudaInfo(true, "posed", 1, "NVIDIA H100 80GB HBM3" + note, 90, 85_045_460_992L));
            case "h200" -> new Platform(base.cpuCores(), base.vectorApi(), base.vectorBitSize(), base.cpuFeatures(),
                    new Platform.CudaInfo(true, "posed", 1, "NVIDIA H200" + note, 90, 150_109_880_320L));
            default -> throw new MoeException("unknown platform pose '" + pose + "'; choose " + String.join(", ", POSES));
        };
    }

    /** A few lines for {@code moe backends}. */
    public static String describe(Platform p) {
        StringBuilder sb = new StringBuilder();
        sb.append("CPU: ").append(p.cpuCores()).append(" cores; Vector API: ")
                .append(p.vectorApi() ? p.vectorBitSize() + "-bit preferred species" : "not available")
                .append("; CPU features: ").append(p.cpuFeatures().isBlank() ? "(unknown)" : p.cpuFeatures()).append('\n');
        Platform.CudaInfo c = p.cuda();
        if (c.deviceCount() > 0) {
            sb.append("CUDA: ").append(c.deviceCount()).append(c.deviceCount() == 1 ? " device" : " devices")
                    .append("; device 0: ").append(c.deviceName()).append(", compute capability ")
                    .append(c.computeCapability() / 10).append('.').append(c.computeCapability() % 10).append(", ")
                    .append(String.format(Locale.ROOT, "%.1f GiB", c.memoryBytes() / (double) (1L << 30)));
            if (!c.available()) {
                sb.append("; not usable: ").append(c.reason());
            }
        } else {
            sb.append("CUDA: none: ").append(c.reason());
        }
        return sb.toString();
    }

    private static final class Real {
        static final Platform PLATFORM = probeNow();

        private static Platform probeNow() {
            int bits = vectorBits();
            return new Platform(Runtime.getRuntime().availableProcessors(), bits > 0, bits,
                    cpuFeatures(Path.of("/proc/cpuinfo")), probeCuda());
        }
    }

    /** The preferred float species width in bits, or 0 when the Vector API is absent or too narrow to help. */
    static int vectorBits() {
        try {
            int bits = VectorHolder.preferredBits();
            return bits >= 128 ? bits : 0;
        } catch (LinkageError | RuntimeException e) {
            // jdk.incubator.vector not resolved (no --add-modules): NoClassDefFoundError.
            return 0;
        }
    }

    /** Touches jdk.incubator.vector only when called, so that its absence is a LinkageError caught above. */
    private static final class VectorHolder {
        static int preferredBits() {
            return jdk.incubator.vector.VectorSpecies.ofPreferred(float.class).vectorBitSize();
        }
    }

    /** The interesting flags of the first CPU in a /proc/cpuinfo file ("" when unreadable). */
    static String cpuFeatures(Path cpuinfo) {
        List<String> lines;
        try {
            if (!Files.isReadable(cpuinfo)) {
                return "";
            }
            lines = Files.readAllLines(cpuinfo);
        } catch (IOException | RuntimeException e) {
            return "";
        }
        return cpuFeatures(lines);
    }

    /** The interesting flags of the first "flags" (x86) or "Features" (arm64) line, space-separated, in a fixed order. */
    public static String cpuFeatures(List<String> cpuinfoLines) {
        Set<String> have = new LinkedHashSet<>();
        for (String line : cpuinfoLines) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String key = line.substring(0, colon).trim();
            // x86: "flags"; arm64: "Features".
            if (key.equals("flags") || key.equals("Features")) {
                for (String f : line.substring(colon + 1).trim().split("\\s+")) {
                    have.add(f);
                }
                break;
            }
        }
        List<String> out = new ArrayList<>();
        for (String f : INTERESTING_FLAGS) {
            if (have.contains(f)) {
                out.add(f);
            }
        }
        return String.join(" ", out);
    }

    // ---- CUDA: the cuda backend's own probe, so that the platform and the backend give one answer ----

    /** The CUDA devices as {@link CudaRuntime#probe()} found them (once per process), or none with the reason. */
    static Platform.CudaInfo probeCuda() {
        return cudaInfo(CudaRuntime.probe());
    }

    /**
     * What a CUDA probe means to the oracle: device 0's facts when it is usable; otherwise the reason, with the
     * device still described when one was found (a GPU whose NVRTC is missing is shown, marked not usable).
     */
    public static Platform.CudaInfo cudaInfo(CudaProbe probe) {
        if (probe.device().isEmpty()) {
            return Platform.CudaInfo.none(probe.reason());
        }
        CudaDevice d = probe.device().get();
        return new Platform.CudaInfo(probe.available(), probe.available() ? "" : probe.reason(),
                Math.max(1, probe.deviceCount()), d.name(), d.computeCapability(), d.totalMemory());
    }
}
