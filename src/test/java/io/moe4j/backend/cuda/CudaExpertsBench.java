package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.cuda.driver.CudaEvent;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.activation.Activation;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import io.moe4j.routing.Routing;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Times {@link CudaBackend}'s Experts.forward on the gpt-oss-20b experts (32 experts, top-4, H = I = 2880, MXFP4,
 * SwiGLU-OAI on interleaved gate/up rows, biases), weights resident, random routing over all experts. Two times
 * per call: the layer-level wall time of forward (float[] in, float[] out: host plan, copies in and out included)
 * and the device time between the copy in and the copy out (CUDA events). Effective bandwidth: bytes of the
 * distinct routed experts' packed weights and scales over the time, next to the device-to-device copy bandwidth
 * (bytes read + written).
 *
 * <p>Usage: {@code CudaExpertsBench [tokens,...] [tile variants wNtNnN,...]}, default {@code 1,4096} and the
 * default tile.
 */
public final class CudaExpertsBench {
    private static final int EXPERTS = 32;
    private static final int TOP_K = 4;
    private static final int HIDDEN = 2880;

    private CudaExpertsBench() {
    }

    public static void main(String[] args) {
        int[] tokenCounts = args.length > 0 ? Arrays.stream(args[0].split(",")).mapToInt(Integer::parseInt).toArray()
                : new int[] {1, 4096};
        List<String> tiles = args.length > 1 ? List.of(args[1].split(",")) : List.of(CudaTuning.defaults().tileName());
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
            System.out.println("CUDA unavailable: " + probe.reason());
            System.exit(2);
        }
        System.out.println("device: " + probe.reason());
        CudaEngine engine = CudaEngine.shared();
        double copy;
        try (CudaStream s = engine.context().createStream()) {
            copy = DeviceBandwidth.copyGbps(engine.context(), s);
        }
        System.out.printf("copy: cuMemcpyDtoD of 2 GiB: %.0f GB/s counting bytes read + written%n", copy);
        List<String> table = new ArrayList<>();
        table.add(String.format("%-5s %-9s %-6s %10s %10s %10s %8s %7s %9s %7s %9s %7s %8s", "T", "tile", "path",
                "wall us", "untimed us", "device us", "gpu us", "%copy", "GB/s wall", "%copy", "GB/s dev", "%copy",
                "TFLOP/s"));
        try (Arena arena = Arena.ofShared()) {
            ExpertWeights w = gptOss20b(arena, new SplittableRandom(2026));
            long bytesPerExpert = w.bytesPerExpert();
            System.out.printf("weights: %d experts x %.2f MB packed (MXFP4 codes + E8M0 scales of w13 and w2)%n",
                    EXPERTS, bytesPerExpert / 1e6);
            for (String tile : tiles) {
                CudaTuning tuning = CudaTuning.fromSystemProperties().withTile(tile);
                try (CudaExperts experts = (CudaExperts) new CudaBackend(tuning).prepare(w, new ExecutionOptions(1))) {
                    for (int tokens : tokenCounts) {
                        if (!tile.equals(tiles.get(0)) && tokens < 64) {
                            continue; // tile variants only change prefill
                        }
                        table.add(time(engine, w, experts, tokens, tile, bytesPerExpert, copy));
                    }
                }
            }
        }
        System.out.println();
        table.forEach(System.out::println);
    }

    private static String time(CudaEngine engine, ExpertWeights w, CudaExperts experts, int tokens, String tile, long bytesPerExpert,
            double copy) {
        SplittableRandom rnd = new SplittableRandom(tokens);
        int variants = 8;
        Routing[] routings = new Routing[variants];
        for (int i = 0; i < variants; i++) {
            routings[i] = routing(rnd, tokens);
        }
        float[] x = new float[tokens * HIDDEN];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        float[] out = new float[x.length];
        int calls = tokens <= 16 ? 400 : tokens <= 512 ? 40 : 12;
        int warm = tokens <= 16 ? 50 : 3;
        double[] wall = new double[calls];
        double[] device = new double[calls];
        double[] bytes = new double[calls];
        try (CudaEvent start = engine.context().createEvent(); CudaEvent end = engine.context().createEvent()) {
            CudaExperts.Timing timing = new CudaExperts.Timing(start, end, List.of());
            for (int i = -warm; i < calls; i++) {
                Routing r = routings[Math.floorMod(i, variants)];
                long t0 = System.nanoTime();
                experts.forward(x, tokens, r, out, timing);
                long t1 = System.nanoTime();
                if (i >= 0) {
                    wall[i] = (t1 - t0) / 1e3;
                    device[i] = end.elapsedMillisSince(start) * 1e3;
                    bytes[i] = distinct(r) * (double) bytesPerExpert;
                }
            }
        }
        // GPU time alone: a busy wait ahead of the start event keeps the GPU busy while the host submits.
        double[] gpu = new double[calls];
        try (CudaEvent start = engine.context().createEvent(); CudaEvent end = engine.context().createEvent()) {
            CudaExperts.Timing timing = new CudaExperts.Timing(start, end, List.of(), new BusyLead(engine)::enqueue);
            for (int i = -warm; i < calls; i++) {
                experts.forward(x, tokens, routings[Math.floorMod(i, variants)], out, timing);
                if (i >= 0) {
                    gpu[i] = end.elapsedMillisSince(start) * 1e3;
                }
            }
        }
        // The same calls untimed: no events.
        double[] plain = new double[calls];
        for (int i = -warm; i < calls; i++) {
            Routing r = routings[Math.floorMod(i, variants)];
            long t0 = System.nanoTime();
            experts.forward(x, tokens, r, out);
            long t1 = System.nanoTime();
            if (i >= 0) {
                plain[i] = (t1 - t0) / 1e3;
            }
        }
        String stages = stages(engine, experts, x, tokens, routings);
        for (float v : out) {
            if (!Float.isFinite(v)) {
                throw new IllegalStateException("non-finite output");
            }
        }
        double wallUs = median(wall);
        double plainUs = median(plain);
        double gpuUs = median(gpu);
        double devUs = median(device);
        double b = median(bytes);
        double flops = 2.0 * tokens * TOP_K * (2.0 * HIDDEN * HIDDEN + (double) HIDDEN * HIDDEN);
        RoutePlan plan = RoutePlan.of(routings[0], w);
        String path = experts.usesTiles(plan) ? "tiles" : "gemv";
        System.out.printf("{\"tokens\":%d,\"tile\":\"%s\",\"path\":\"%s\",\"wall_us\":%.2f,\"device_us\":%.2f,"
                + "\"wall_untimed_us\":%.2f,\"gpu_us\":%.2f,\"bytes\":%.0f,\"copy_gbs\":%.0f}%n", tokens, tile, path,
                wallUs, devUs, plainUs, gpuUs, b, copy);
        return String.format("%-5d %-9s %-6s %10.1f %10.1f %10.1f %8.1f %6.1f%% %9.0f %6.1f%% %9.0f %6.1f%% %8.1f  %s",
                tokens, tile, path, wallUs, plainUs, devUs, gpuUs, 100 * b / gpuUs / 1e3 / copy, b / wallUs / 1e3,
                100 * b / wallUs / 1e3 / copy, b / devUs / 1e3, 100 * b / devUs / 1e3 / copy, flops / devUs / 1e6,
                stages);
    }

    /**
     * Median device microseconds of each stage: prepare, GEMM1, activation, GEMM2, combine. Launched one by one
     * (stage events keep small batches off the graph replay), so at T = 1 the gaps include launch latency.
     */
    private static String stages(CudaEngine engine, CudaExperts experts, float[] x, int tokens, Routing[] routings) {
        List<CudaEvent> events = new ArrayList<>();
        try (CudaEvent start = engine.context().createEvent(); CudaEvent end = engine.context().createEvent()) {
            for (int i = 0; i < 5; i++) {
                events.add(engine.context().createEvent());
            }
            CudaExperts.Timing timing = new CudaExperts.Timing(start, end, events);
            int calls = 5;
            double[][] us = new double[5][calls];
            float[] out = new float[x.length];
            for (int c = 0; c < calls; c++) {
                experts.forward(x, tokens, routings[c % routings.length], out, timing);
                CudaEvent prev = start;
                for (int i = 0; i < 5; i++) {
                    us[i][c] = events.get(i).elapsedMillisSince(prev) * 1e3;
                    prev = events.get(i);
                }
            }
            return String.format("stages us: prep %.0f gemm1 %.0f act %.0f gemm2 %.0f combine %.0f", median(us[0]),
                    median(us[1]), median(us[2]), median(us[3]), median(us[4]));
        } finally {
            events.forEach(CudaEvent::close);
        }
    }

    private static int distinct(Routing r) {
        Set<Integer> s = new HashSet<>();
        for (int id : r.ids()) {
            s.add(id);
        }
        return s.size();
    }

    /** Each token: 4 distinct experts uniformly over all 32, weights of a softmax over random logits. */
    static Routing routing(SplittableRandom rnd, int tokens) {
        int[] ids = new int[tokens * TOP_K];
        float[] weights = new float[tokens * TOP_K];
        for (int t = 0; t < tokens; t++) {
            int[] chosen = new int[TOP_K];
            int n = 0;
            while (n < TOP_K) {
                int e = rnd.nextInt(EXPERTS);
                boolean seen = false;
                for (int j = 0; j < n; j++) {
                    seen |= chosen[j] == e;
                }
                if (!seen) {
                    chosen[n++] = e;
                }
            }
            Arrays.sort(chosen);
            double sum = 0;
            double[] raw = new double[TOP_K];
            for (int j = 0; j < TOP_K; j++) {
                raw[j] = Math.exp(rnd.nextGaussian());
                sum += raw[j];
            }
            for (int j = 0; j < TOP_K; j++) {
                ids[t * TOP_K + j] = chosen[j];
                weights[t * TOP_K + j] = (float) (raw[j] / sum);
            }
        }
        return new Routing(tokens, TOP_K, ids, weights, false);
    }

    /** Synthetic gpt-oss-20b experts: random E2M1 codes, E8M0 scales 2^-9 .. 2^-1, small random biases. */
    static ExpertWeights gptOss20b(Arena arena, SplittableRandom rnd) {
        ExpertMatrix w13 = mxfp4(arena, rnd, 2 * HIDDEN, HIDDEN);
        ExpertMatrix w2 = mxfp4(arena, rnd, HIDDEN, HIDDEN);
        float[] b13 = new float[EXPERTS * 2 * HIDDEN];
        float[] b2 = new float[EXPERTS * HIDDEN];
        for (int i = 0; i < b13.length; i++) {
            b13[i] = (float) (rnd.nextGaussian() * 0.05);
        }
        for (int i = 0; i < b2.length; i++) {
            b2[i] = (float) (rnd.nextGaussian() * 0.05);
        }
        return new ExpertWeights(new QuantScheme("gpt-oss mxfp4", WeightFormat.MXFP4,
                io.moe4j.quant.ActivationFormat.NONE, false), EXPERTS, HIDDEN, HIDDEN, w13, w2, b13, b2,
                GateLayout.INTERLEAVED, Activation.SWIGLU_OAI, Activation.OAI_LIMIT, ActivationQuant.NONE,
                ActivationQuant.NONE, null);
    }

    private static ExpertMatrix mxfp4(Arena arena, SplittableRandom rnd, int rows, int cols) {
        long n = (long) EXPERTS * rows;
        MemorySegment codes = arena.allocate(n * cols / 2, 16);
        for (long i = 0; i < codes.byteSize(); i += 8) {
            codes.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
        MemorySegment scales = arena.allocate(n * cols / 32, 16);
        for (long i = 0; i < scales.byteSize(); i++) {
            scales.set(JAVA_BYTE, i, (byte) rnd.nextInt(118, 127));
        }
        return new ExpertMatrix(EXPERTS, rows, cols, CodeType.FP4_E2M1, codes,
                new BlockScales(ScaleType.E8M0, scales, 1, 32, rows, cols / 32), null, null, 0, null);
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
