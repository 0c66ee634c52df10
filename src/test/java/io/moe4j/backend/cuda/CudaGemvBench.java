package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaEvent;
import io.moe4j.backend.cuda.driver.CudaGraph;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Times the grouped GEMVs (the engine's MXFP4 tensor-core one, and the CUDA-core {@link RowGemv} for comparison)
 * on the gpt-oss-20b expert shapes (32 experts, 4 routed per token, H = I = 2880: gate_up [32, 5760, 2880], down
 * [32, 2880, 2880]) with CUDA events over replays of a captured graph, and
 * measures device-to-device copy bandwidth the same way. Prints microseconds per call and effective bandwidth:
 * bytes of the routed experts' packed weights and scales (each distinct expert once) over time, next to the copy
 * bandwidth. Consecutive calls route to disjoint experts, so the weights come from HBM and not from L2.
 *
 * <p>Usage: {@code CudaGemvBench [quick | profile | variants k4t2d3,k1t8d6,...]}: quick times only MXFP4 with the
 * default tuning; profile runs a few plain launches of the default MXFP4 kernel for a profiler to capture;
 * variants times the listed tensor-core tunings (K split, tiles per block, depth) at T = 1. With {@link #HOT} every
 * call reads the same experts instead (from L2 where they fit).
 */
public final class CudaGemvBench {
    private static final int EXPERTS = 32;
    private static final int TOP_K = 4;
    private static final int HIDDEN = 2880;
    /** Calls per captured graph; consecutive calls rotate through disjoint expert sets. */
    private static final int CALLS_PER_GRAPH = 64;
    private static final int REPLAYS = 7;
    /**
     * {@code -Dmoe4j.gemvBench.hot=true}: every call routes to the same experts, so that weights small enough stay in
     * L2; the time is then the kernel's floor apart from DRAM (fixed costs: launch, x preparation, ramp, tail).
     */
    private static final boolean HOT = Boolean.getBoolean("moe4j.gemvBench.hot");

    private CudaGemvBench() {
    }

    public static void main(String[] args) {
        boolean quick = args.length > 0 && args[0].equals("quick");
        boolean profile = args.length > 0 && args[0].equals("profile");
        List<GemvTuning> listed = args.length > 1 && args[0].equals("variants") ? parseVariants(args[1]) : List.of();
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
            System.out.println("CUDA unavailable: " + probe.reason());
            System.exit(2);
        }
        System.out.println("device: " + probe.reason());
        try (CudaContext ctx = CudaRuntime.open(0); CudaStream stream = ctx.createStream()) {
            double copy = copyBandwidth(ctx, stream);
            System.out.printf("copy: cuMemcpyDtoD of 2 GiB: %.0f GB/s counting bytes read + written (%.0f GB/s one way)%n",
                    copy, copy / 2);
            if (profile) {
                profile(ctx, stream);
                return;
            }
            System.out.printf("launch floor: an empty kernel replayed in a graph takes %.2f us per launch%n",
                    emptyKernelMicros(ctx, stream));
            List<String> table = new ArrayList<>();
            table.add(String.format("%-26s %-8s %-4s %-5s %9s %9s %8s %7s %7s  %s", "kernel", "matrix", "T",
                    "pairs", "us/call", "us(launch)", "GB/s", "%copy", "%1way", "resources"));
            try (Arena arena = Arena.ofShared()) {
                SplittableRandom rnd = new SplittableRandom(2026);
                KernelCompiler compiler = KernelCompiler.forDevice(ctx.device());
                GemvTuning base = GemvTuning.defaults();
                List<GemvTuning> variants = !listed.isEmpty() ? listed : quick ? List.of(base) : List.of(base,
                        new GemvTuning(2, 4, 4), new GemvTuning(4, 2, 4), new GemvTuning(1, 8, 4),
                        new GemvTuning(4, 2, 3));
                for (String matrix : new String[] {"gate_up", "down"}) {
                    int n = matrix.equals("gate_up") ? 2 * HIDDEN : HIDDEN;
                    RowStack host = mxfp4(arena, rnd, n, HIDDEN);
                    for (GemvTuning tuning : variants) {
                        try (GroupedGemv gemm = GroupedGemv.tensorCores(Mxfp4Gemv.create(ctx, compiler, tuning));
                                GroupedGemv.Weights w = gemm.upload(host)) {
                            boolean sweepTokens = listed.isEmpty() && tuning == base;
                            for (int tokens : quick || !sweepTokens ? new int[] {1} : new int[] {1, 2, 4, 8}) {
                                table.add(time(ctx, stream, gemm, w, matrix, tokens, copy));
                            }
                        }
                    }
                    if (!quick && listed.isEmpty()) {
                        // The CUDA-core GEMV on the same stack, for comparison.
                        try (GroupedGemv gemm = new RowGemv(ctx, compiler, 2, 8);
                                GroupedGemv.Weights w = gemm.upload(host)) {
                            for (int tokens : new int[] {1, 2, 4, 8}) {
                                table.add(time(ctx, stream, gemm, w, matrix, tokens, copy));
                            }
                        }
                    }
                }
                if (!quick && listed.isEmpty()) {
                    RowStack[] others = {bf16(arena, rnd, 2 * HIDDEN, HIDDEN), fp8(arena, rnd, 2 * HIDDEN, HIDDEN),
                        int4(arena, rnd, 2 * HIDDEN, HIDDEN, 32)};
                    for (RowStack host : others) {
                        for (int rowsPerWarp : new int[] {2, 4}) {
                            try (GroupedGemv gemm = new RowGemv(ctx, compiler, rowsPerWarp, 8);
                                    GroupedGemv.Weights w = gemm.upload(host)) {
                                table.add(time(ctx, stream, gemm, w, "gate_up", 1, copy));
                            }
                        }
                    }
                }
            }
            System.out.println();
            table.forEach(System.out::println);
        }
    }

    /** "k4t2d3" -> tensor-core tuning with K split 4, 2 tiles a block, depth 3. */
    static List<GemvTuning> parseVariants(String spec) {
        List<GemvTuning> out = new ArrayList<>();
        for (String v : spec.split(",")) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("k(\\d+)t(\\d+)d(\\d+)").matcher(v.trim());
            if (!m.matches()) {
                throw new IllegalArgumentException("variant " + v + " is not kNtNdN");
            }
            out.add(new GemvTuning(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                    Integer.parseInt(m.group(3))));
        }
        return out;
    }

    /** A few plain launches of the default MXFP4 kernel on gate_up at T = 1, for ncu or nsys to capture. */
    static void profile(CudaContext ctx, CudaStream stream) {
        try (Arena arena = Arena.ofShared();
                Mxfp4Gemv gemm = Mxfp4Gemv.create(ctx);
                Mxfp4Tiles w = gemm.upload(mxfp4(arena, new SplittableRandom(1), 2 * HIDDEN, HIDDEN).mxfp4());
                DeviceBuffer x = ctx.allocate(4L * HIDDEN);
                DeviceBuffer routes = ctx.allocate(Routes.bytes(TOP_K) * 8);
                DeviceBuffer out = ctx.allocate(4L * TOP_K * 2 * HIDDEN)) {
            SplittableRandom rnd = new SplittableRandom(2);
            float[] xs = new float[HIDDEN];
            for (int i = 0; i < HIDDEN; i++) {
                xs[i] = (float) rnd.nextGaussian();
            }
            x.copyFrom(arena.allocateFrom(JAVA_FLOAT, xs));
            for (int s = 0; s < 8; s++) {
                int[] experts = {4 * s, 4 * s + 1, 4 * s + 2, 4 * s + 3};
                routes.copyFrom(Routes.pack(arena, experts, new int[TOP_K], EXPERTS, 1), Routes.bytes(TOP_K) * s);
            }
            for (int s = 0; s < 8; s++) {
                gemm.forward(w, x, routes, (long) TOP_K * s, TOP_K, out, stream);
            }
            stream.synchronize();
            System.out.println("profiled 8 launches of " + gemm.tuning().describe());
        }
    }

    /** Per-launch time of an empty one-block kernel in a captured graph: the fixed cost every call pays. */
    static double emptyKernelMicros(CudaContext ctx, CudaStream stream) {
        KernelSource source = new KernelSource("empty.cu", "extern \"C\" __global__ void moe_empty() {}",
                java.util.Map.of(), List.of());
        byte[] cubin = KernelCompiler.forDevice(ctx.device()).compile(source);
        try (var module = ctx.loadModule(cubin); CudaEvent start = ctx.createEvent(); CudaEvent end = ctx.createEvent()) {
            var function = module.function("moe_empty");
            Runnable calls = () -> {
                for (int i = 0; i < CALLS_PER_GRAPH; i++) {
                    try (Arena arena = Arena.ofConfined()) {
                        function.launch(1, 1, 1, 32, 1, 1, 0, stream, new io.moe4j.backend.cuda.driver.KernelArgs(arena));
                    }
                }
            };
            double[] ms = graphReplays(stream, calls, start, end);
            return median(ms) * 1e3 / CALLS_PER_GRAPH;
        }
    }

    /** Median over replays of cuMemcpyDtoDAsync of 2 GiB, as bytes read plus bytes written per second. */
    static double copyBandwidth(CudaContext ctx, CudaStream stream) {
        return DeviceBandwidth.copyGbps(ctx, stream);
    }

    static String time(CudaContext ctx, CudaStream stream, GroupedGemv gemm, GroupedGemv.Weights w, String matrix,
            int tokens, double copy) {
        int pairs = tokens * TOP_K;
        int sets = CALLS_PER_GRAPH;
        try (Arena arena = Arena.ofConfined();
                DeviceBuffer x = ctx.allocate(4L * pairs * w.cols());
                DeviceBuffer routes = ctx.allocate(Routes.bytes(pairs) * sets);
                DeviceBuffer out = ctx.allocate(4L * pairs * w.rows());
                CudaEvent start = ctx.createEvent(); CudaEvent end = ctx.createEvent()) {
            float[] xs = new float[pairs * w.cols()];
            SplittableRandom rnd = new SplittableRandom(7);
            for (int i = 0; i < xs.length; i++) {
                xs[i] = (float) rnd.nextGaussian();
            }
            x.copyFrom(arena.allocateFrom(JAVA_FLOAT, xs));
            // Call s, token t takes experts 4(sT + t) .. +3 (mod 32): consecutive calls never share an expert at
            // T = 1, and at T = 8 each call reads all 32. HOT: every call takes experts 4t .. 4t + 3.
            double distinctBytes = 0;
            int xRows = matrix.equals("gate_up") ? tokens : pairs;
            for (int s = 0; s < sets; s++) {
                int[] experts = new int[pairs];
                int[] rows = new int[pairs];
                Set<Integer> distinct = new HashSet<>();
                for (int t = 0; t < tokens; t++) {
                    for (int j = 0; j < TOP_K; j++) {
                        int p = t * TOP_K + j;
                        experts[p] = HOT ? (TOP_K * t + j) % EXPERTS : (TOP_K * (s * tokens + t) + j) % EXPERTS;
                        rows[p] = matrix.equals("gate_up") ? t : p;
                        distinct.add(experts[p]);
                    }
                }
                routes.copyFrom(Routes.pack(arena, experts, rows, EXPERTS, xRows), Routes.bytes(pairs) * s);
                distinctBytes += (double) distinct.size() * w.bytesPerExpert();
            }
            distinctBytes /= sets;

            Runnable calls = () -> {
                for (int s = 0; s < sets; s++) {
                    gemm.forward(w, x, routes, (long) pairs * s, pairs, out, stream);
                }
            };
            // Plain launches first (also the warm-up: compile, module load, first touch).
            calls.run();
            stream.synchronize();
            double[] launchMs = new double[REPLAYS];
            for (int i = 0; i < REPLAYS; i++) {
                start.record(stream);
                calls.run();
                end.record(stream);
                end.synchronize();
                launchMs[i] = end.elapsedMillisSince(start);
            }
            double[] graphMs = graphReplays(stream, calls, start, end);
            double usGraph = median(graphMs) * 1e3 / sets;
            double usLaunch = median(launchMs) * 1e3 / sets;
            double gbps = distinctBytes / (usGraph * 1e-6) / 1e9;
            return String.format("%-26s %-8s %-4d %-5d %9.2f %9.2f %8.0f %6.1f%% %6.1f%%  %s  %s", gemm.describe(w),
                    matrix, tokens, pairs, usGraph, usLaunch, gbps,
                    100 * gbps / copy, 100 * gbps / (copy / 2), gemm.resources(w, pairs), spread(graphMs, sets));
        }
    }

    private static String spread(double[] ms, int calls) {
        double[] s = ms.clone();
        Arrays.sort(s);
        return String.format("[min %.2f max %.2f us]", s[0] * 1e3 / calls, s[s.length - 1] * 1e3 / calls);
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    // ---- random stacks of the benchmark shape (valid values: no NaN/Inf codes) ----------------------------------

    static RowStack mxfp4(Arena arena, SplittableRandom rnd, int n, int k) {
        long rows = (long) EXPERTS * n;
        MemorySegment codes = randomBytes(arena, rnd, rows * k / 2, -1L);
        MemorySegment scales = arena.allocate(rows * k / 32);
        for (long i = 0; i < scales.byteSize(); i++) {
            scales.set(JAVA_BYTE, i, (byte) (118 + rnd.nextInt(12)));
        }
        return new RowStack(RowFormat.MXFP4, EXPERTS, n, k, 0, codes, scales);
    }

    static RowStack bf16(Arena arena, SplittableRandom rnd, int n, int k) {
        // Clearing bit 14 of each bf16 keeps its exponent below 128: finite values under 2 in magnitude.
        MemorySegment codes = randomBytes(arena, rnd, 2L * EXPERTS * n * k, 0xBFFFBFFFBFFFBFFFL);
        return new RowStack(RowFormat.BF16, EXPERTS, n, k, 0, codes, MemorySegment.NULL);
    }

    static RowStack fp8(Arena arena, SplittableRandom rnd, int n, int k) {
        long rows = (long) EXPERTS * n;
        // Clearing bit 6 of each byte keeps the exponent under 8: never the NaN code.
        MemorySegment codes = randomBytes(arena, rnd, rows * k, 0xBFBFBFBFBFBFBFBFL);
        MemorySegment scales = arena.allocate(4 * rows);
        for (long i = 0; i < rows; i++) {
            scales.set(JAVA_FLOAT_UNALIGNED, 4 * i, 0.01f);
        }
        return new RowStack(RowFormat.FP8_E4M3, EXPERTS, n, k, 0, codes, scales);
    }

    static RowStack int4(Arena arena, SplittableRandom rnd, int n, int k, int group) {
        long rows = (long) EXPERTS * n;
        MemorySegment codes = randomBytes(arena, rnd, rows * k / 2, -1L);
        MemorySegment scales = arena.allocate(2 * rows * (k / group));
        for (long i = 0; i < rows * (k / group); i++) {
            scales.set(JAVA_SHORT_UNALIGNED, 2 * i, (short) 0x3C00); // bf16 0.0078125
        }
        return new RowStack(RowFormat.INT4, EXPERTS, n, k, group, codes, scales);
    }

    private static MemorySegment randomBytes(Arena arena, SplittableRandom rnd, long count, long mask) {
        MemorySegment s = arena.allocate(count, 8);
        long i = 0;
        for (; i + 8 <= count; i += 8) {
            s.set(JAVA_LONG_UNALIGNED, i, rnd.nextLong() & mask);
        }
        for (; i < count; i++) {
            s.set(JAVA_BYTE, i, (byte) (rnd.nextInt() & mask));
        }
        return s;
    }

    /** Captures calls into a graph, launches it once untimed, then times REPLAYS launches between two events (ms). */
    private static double[] graphReplays(CudaStream stream, Runnable calls, CudaEvent start, CudaEvent end) {
        double[] ms = new double[REPLAYS];
        try (CudaGraph graph = stream.capture(calls)) {
            graph.launch(stream);
            stream.synchronize();
            for (int i = 0; i < REPLAYS; i++) {
                start.record(stream);
                graph.launch(stream);
                end.record(stream);
                end.synchronize();
                ms[i] = end.elapsedMillisSince(start);
            }
        }
        return ms;
    }
}
