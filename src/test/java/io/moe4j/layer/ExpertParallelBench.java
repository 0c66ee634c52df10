package io.moe4j.layer;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.cuda.CudaBackend;
import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.nccl.ExchangeTiming;
import io.moe4j.backend.cuda.nccl.Nccl;
import io.moe4j.backend.cuda.nccl.NcclComm;
import io.moe4j.backend.cuda.nccl.NcclDataType;
import io.moe4j.backend.cuda.nccl.NcclGroup;
import io.moe4j.backend.cuda.nccl.NcclReduction;
import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Expert parallelism across the GPUs of one host, on a DeepSeek-V3-shaped MoE layer (256 experts, top-8, H 7168,
 * I 2048, FP8 weights in 128×128 blocks, random routing, no shared expert), in the form the whole-model path runs it
 * ({@code io.moe4j.model.cuda.ExpertExchange}): the batch's rows spread over N devices, all-gathered, every device
 * running its contiguous 1/N slice of the experts on all of them, the partial outputs reduce-scattered home. Each
 * device holds the whole stack (uploaded once) but routes only its slice, so its kernels read the bytes a slice-sized
 * upload would give them. Prints, per batch size and device count, the experts' time (the slowest device; a host call
 * each), the exchange's collectives timed alone with the same bytes ({@link ExchangeTiming}: NCCL's all-gather and
 * reduce-scatter, against NCCL's all-to-all of the same bytes as grouped send/receive), and tokens/s of experts and
 * exchange together against one device holding every expert.
 *
 * <p>Usage: {@code ExpertParallelBench [tokens=64,512] [iterations=10]} on a machine with GPUs and NCCL.
 */
public final class ExpertParallelBench {
    private static final int EXPERTS = 256;
    private static final int TOP_K = 8;
    private static final int HIDDEN = 7168;
    private static final int INTER = 2048;

    private ExpertParallelBench() {
    }

    public static void main(String[] args) throws Exception {
        int[] batches = Arrays.stream((args.length > 0 ? args[0] : "64,512").split(",")).mapToInt(Integer::parseInt)
                .toArray();
        int iterations = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        CudaProbe cuda = CudaRuntime.probe();
        if (!cuda.available()) {
            throw new IllegalStateException("no usable CUDA device: " + cuda.reason());
        }
        Nccl nccl = Nccl.probe().nccl().orElseThrow(() -> new IllegalStateException(Nccl.probe().reason()));
        int devices = cuda.deviceCount();
        System.out.println(cuda.reason() + "; " + devices + " device(s); NCCL " + nccl.versionString());
        long t0 = System.nanoTime();
        try (Arena arena = Arena.ofShared()) {
            SyntheticWeights.Shape shape = new SyntheticWeights.Shape(EXPERTS, HIDDEN, INTER, GateLayout.CONCATENATED,
                    Activation.SILU_AND_MUL, false);
            ExpertWeights all = SyntheticWeights.generate(SyntheticScheme.FP8_BLOCK, shape, 11, arena, b -> { });
            System.out.printf("weights: %.2f GB, generated in %.1f s%n", all.bytesPerExpert() * (double) EXPERTS / 1e9,
                    (System.nanoTime() - t0) / 1e9);
            System.out.printf("%6s %3s %11s %12s %10s %10s %10s %10s %8s%n", "tokens", "N", "experts ms",
                    "exchange ms", "GB/s", "a2a ms", "a2a GB/s", "tokens/s", "vs N=1");
            double[] single = new double[batches.length]; // tokens/s on one device, per batch size
            for (int n = 1; n <= devices; n *= 2) {
                run(nccl, all, n, batches, iterations, single);
            }
        }
    }

    /** One device count's rows; with n = 1 it fills {@code single}, which later rows are compared with. */
    private static void run(Nccl nccl, ExpertWeights all, int n, int[] batches, int iterations, double[] single)
            throws Exception {
        // every device holds the whole stack (uploaded once) but routes only its slice: the timing reads only the
        // routed experts' bytes, so a slice's kernels see what a slice-sized upload would give them
        List<Experts> slices = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            for (int d = 0; d < n; d++) {
                int[] map = new int[EXPERTS];
                for (int g = 0; g < EXPERTS; g++) {
                    map[g] = g / (EXPERTS / n) == d ? g : -1;
                }
                slices.add(new CudaBackend().prepare(n == 1 ? all : all.withExpertMap(map),
                        new ExecutionOptions(2).onDevice(d)));
            }
            for (int bi = 0; bi < batches.length; bi++) {
                int tokens = batches[bi];
                float[] x = SyntheticWeights.inputs(tokens, HIDDEN, 5);
                Routing routing = randomRouting(tokens, 17);
                float[][] out = new float[n][tokens * HIDDEN];
                double[] experts = new double[iterations];
                for (int it = -2; it < iterations; it++) {
                    long a = System.nanoTime();
                    List<Future<?>> f = new ArrayList<>();
                    for (int d = 0; d < n; d++) {
                        int dev = d;
                        f.add(pool.submit(() -> slices.get(dev).forward(x, tokens, routing, out[dev])));
                    }
                    for (Future<?> g : f) {
                        g.get();
                    }
                    if (it >= 0) {
                        experts[it] = (System.nanoTime() - a) / 1e6;
                    }
                }
                Arrays.sort(experts);
                double e = experts[iterations / 2];
                ExchangeTiming exchange = n == 1 ? null
                        : ExchangeTiming.measure(nccl, n, Math.ceilDiv(tokens, n), HIDDEN, iterations);
                double r = exchange == null ? 0 : exchange.gatherScatterMs();
                double tps = tokens / ((e + r) / 1e3);
                if (n == 1) {
                    single[bi] = tps;
                }
                System.out.printf("%6d %3d %11.3f %12.3f %10.1f %10.3f %10.1f %10.0f %8.2f%n", tokens, n, e, r,
                        exchange == null ? Double.NaN : exchange.gatherScatterGbps(),
                        exchange == null ? Double.NaN : exchange.allToAllMs(),
                        exchange == null ? Double.NaN : exchange.allToAllGbps(), tps, tps / single[bi]);
            }
        } finally {
            for (Experts s : slices) {
                s.close();
            }
            pool.shutdownNow();
        }
    }

    /** Top-8 of 256 distinct experts per token, weights summing to 1. */
    private static Routing randomRouting(int tokens, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] ids = new int[tokens * TOP_K];
        float[] w = new float[tokens * TOP_K];
        for (int t = 0; t < tokens; t++) {
            int[] pick = rnd.ints(0, EXPERTS).distinct().limit(TOP_K).sorted().toArray();
            for (int j = 0; j < TOP_K; j++) {
                ids[t * TOP_K + j] = pick[j];
                w[t * TOP_K + j] = 1f / TOP_K;
            }
        }
        return new Routing(tokens, TOP_K, ids, w, false);
    }
}
