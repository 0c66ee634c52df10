package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * NVRTC, the run-time CUDA C++ compiler: compiles kernel sources for the device in hand to CUBIN (a real
 * architecture such as {@code sm_90a}) or PTX (a virtual one such as {@code compute_90}).
 */
public final class Nvrtc {
    private final String library;
    private final MethodHandle nvrtcVersion;
    private final MethodHandle nvrtcGetErrorString;
    private final MethodHandle nvrtcGetNumSupportedArchs;
    private final MethodHandle nvrtcGetSupportedArchs;
    private final MethodHandle nvrtcCreateProgram;
    private final MethodHandle nvrtcDestroyProgram;
    private final MethodHandle nvrtcCompileProgram;
    private final MethodHandle nvrtcGetProgramLogSize;
    private final MethodHandle nvrtcGetProgramLog;
    private final MethodHandle nvrtcGetCUBINSize;
    private final MethodHandle nvrtcGetCUBIN;
    private final MethodHandle nvrtcGetPTXSize;
    private final MethodHandle nvrtcGetPTX;

    /** What a compile produced: the image the driver loads, and the compiler's log (warnings; may be empty). */
    public record Output(byte[] image, boolean cubin, String log) {
    }

    private Nvrtc(NativeLibrary lib) {
        library = lib.name();
        nvrtcVersion = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "nvrtcVersion");
        nvrtcGetErrorString = lib.function(FunctionDescriptor.of(ADDRESS, JAVA_INT), "nvrtcGetErrorString");
        nvrtcGetNumSupportedArchs = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS), "nvrtcGetNumSupportedArchs");
        nvrtcGetSupportedArchs = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS), "nvrtcGetSupportedArchs");
        nvrtcCreateProgram = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS,
                ADDRESS), "nvrtcCreateProgram");
        nvrtcDestroyProgram = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS), "nvrtcDestroyProgram");
        nvrtcCompileProgram = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS),
                "nvrtcCompileProgram");
        nvrtcGetProgramLogSize = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "nvrtcGetProgramLogSize");
        nvrtcGetProgramLog = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "nvrtcGetProgramLog");
        nvrtcGetCUBINSize = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "nvrtcGetCUBINSize");
        nvrtcGetCUBIN = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "nvrtcGetCUBIN");
        nvrtcGetPTXSize = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "nvrtcGetPTXSize");
        nvrtcGetPTX = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "nvrtcGetPTX");
    }

    private static volatile Nvrtc instance;

    /** The process-wide NVRTC, located by {@link NvrtcLocator#fromSystem()} on first use. */
    public static Nvrtc get() {
        Nvrtc n = instance;
        if (n == null) {
            synchronized (Nvrtc.class) {
                n = instance;
                if (n == null) {
                    n = load(NvrtcLocator.fromSystem());
                    instance = n;
                }
            }
        }
        return n;
    }

    /** Loads the first candidate that opens and exports NVRTC; the exception lists every attempt otherwise. */
    public static Nvrtc load(NvrtcLocator locator) {
        List<String> attempts = new ArrayList<>();
        for (LibraryCandidate c : locator.candidates()) {
            try {
                return new Nvrtc(NativeLibrary.open(c));
            } catch (RuntimeException e) {
                attempts.add(c.describe() + ": " + e.getMessage());
            }
        }
        throw new CudaException("nvrtc", -1, "NVRTC (libnvrtc.so) not found; set -Dmoe4j.cuda.nvrtc=/path/libnvrtc.so.N"
                + " or MOE4J_NVRTC. Searched " + locator.searchDirectories() + "; tried " + attempts);
    }

    public String library() {
        return library;
    }

    /** NVRTC's version as major*1000 + minor*10 (the driver's convention). */
    public int version() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment major = arena.allocate(JAVA_INT);
            MemorySegment minor = arena.allocate(JAVA_INT);
            check("nvrtcVersion", (int) nvrtcVersion.invokeExact(major, minor));
            return major.get(JAVA_INT, 0) * 1000 + minor.get(JAVA_INT, 0) * 10;
        } catch (Throwable t) {
            throw NativeLibrary.rethrow(t);
        }
    }

    /** The real architectures this NVRTC can emit, as 90 for sm_90. */
    public int[] supportedArchitectures() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            check("nvrtcGetNumSupportedArchs", (int) nvrtcGetNumSupportedArchs.invokeExact(count));
            MemorySegment archs = arena.allocate(JAVA_INT, Math.max(1, count.get(JAVA_INT, 0)));
            check("nvrtcGetSupportedArchs", (int) nvrtcGetSupportedArchs.invokeExact(archs));
            return archs.asSlice(0, 4L * count.get(JAVA_INT, 0)).toArray(JAVA_INT);
        } catch (Throwable t) {
            throw NativeLibrary.rethrow(t);
        }
    }

    /**
     * Compiles {@code source} with the given headers (include name to text) and options. A real architecture
     * ({@code --gpu-architecture=sm_XX}) yields CUBIN, a virtual one PTX. Throws with the compile log on failure.
     */
    public Output compile(String name, String source, Map<String, String> headers, List<String> options) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment program = arena.allocate(ADDRESS);
            MemorySegment headerTexts = arena.allocate(ADDRESS, Math.max(1, headers.size()));
            MemorySegment headerNames = arena.allocate(ADDRESS, Math.max(1, headers.size()));
            int i = 0;
            for (Map.Entry<String, String> h : headers.entrySet()) {
                headerTexts.setAtIndex(ADDRESS, i, arena.allocateFrom(h.getValue()));
                headerNames.setAtIndex(ADDRESS, i, arena.allocateFrom(h.getKey()));
                i++;
            }
            check("nvrtcCreateProgram", (int) nvrtcCreateProgram.invokeExact(program, arena.allocateFrom(source),
                    arena.allocateFrom(name), headers.size(), headerTexts, headerNames));
            MemorySegment prog = program.get(ADDRESS, 0);
            try {
                MemorySegment opts = arena.allocate(ADDRESS, Math.max(1, options.size()));
                for (int o = 0; o < options.size(); o++) {
                    opts.setAtIndex(ADDRESS, o, arena.allocateFrom(options.get(o)));
                }
                int result = (int) nvrtcCompileProgram.invokeExact(prog, options.size(), opts);
                String log = log(arena, prog);
                if (result != 0) {
                    throw new CudaException("nvrtcCompileProgram", result, "nvrtcCompileProgram failed for " + name
                            + " with " + options + ": " + errorString(result) + "\n" + log);
                }
                boolean cubin = options.stream().anyMatch(o -> o.startsWith("--gpu-architecture=sm_")
                        || o.startsWith("-arch=sm_"));
                MemorySegment size = arena.allocate(JAVA_LONG);
                if (cubin) {
                    check("nvrtcGetCUBINSize", (int) nvrtcGetCUBINSize.invokeExact(prog, size));
                } else {
                    check("nvrtcGetPTXSize", (int) nvrtcGetPTXSize.invokeExact(prog, size));
                }
                MemorySegment image = arena.allocate(Math.max(1, size.get(JAVA_LONG, 0)));
                if (cubin) {
                    check("nvrtcGetCUBIN", (int) nvrtcGetCUBIN.invokeExact(prog, image));
                } else {
                    check("nvrtcGetPTX", (int) nvrtcGetPTX.invokeExact(prog, image));
                }
                return new Output(image.toArray(JAVA_BYTE), cubin, log);
            } finally {
                int ignoredOnCleanup = (int) nvrtcDestroyProgram.invokeExact(program);
            }
        } catch (Throwable t) {
            throw NativeLibrary.rethrow(t);
        }
    }

    private String log(Arena arena, MemorySegment prog) throws Throwable {
        MemorySegment size = arena.allocate(JAVA_LONG);
        if ((int) nvrtcGetProgramLogSize.invokeExact(prog, size) != 0 || size.get(JAVA_LONG, 0) <= 1) {
            return "";
        }
        MemorySegment text = arena.allocate(size.get(JAVA_LONG, 0));
        if ((int) nvrtcGetProgramLog.invokeExact(prog, text) != 0) {
            return "";
        }
        return new String(text.toArray(JAVA_BYTE), 0, (int) size.get(JAVA_LONG, 0) - 1, StandardCharsets.UTF_8).strip();
    }

    private void check(String call, int result) {
        if (result != 0) {
            throw new CudaException(call, result, call + " failed: " + errorString(result));
        }
    }

    private String errorString(int result) {
        try {
            MemorySegment p = (MemorySegment) nvrtcGetErrorString.invokeExact(result);
            return p.equals(MemorySegment.NULL) ? "nvrtcResult " + result : p.reinterpret(256).getString(0);
        } catch (Throwable t) {
            return "nvrtcResult " + result;
        }
    }
}
