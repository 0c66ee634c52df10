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
 * Expert parallelism across the GPUs of one host with replicated tokens, on a DeepSeek-V3-shaped MoE layer (256
 * experts, top-8, H 7168, I 2048, FP8 weights in 128×128 blocks, random routing, no shared expert): every device
 * routes 1/N of the experts (contiguous slices; each holds the whole stack, uploaded once, but its kernels read only
 * the routed experts' bytes), runs the layer on the same batch, and an NCCL all-reduce sums the N outputs. Prints,
 * per batch size and device count, the experts' time (the slowest device; a host call each: x in, output out), the
 * all-reduce's time with its data already on the devices (NCCL's own speed for those bytes, with its bus bandwidth
 * 2(N-1)/N · bytes / time), and tokens/s of the two together against one device holding every expert.
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
            System.out.printf("%6s %3s %12s %14s %14s %12s %12s%n", "tokens", "N", "experts ms", "all-reduce ms",
                    "bus GB/s", "tokens/s", "vs N=1");
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
        List<NcclComm> comms = NcclComm.initAll(nccl, java.util.stream.IntStream.range(0, n).toArray());
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
                double[] reduce = new double[iterations];
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
                    long b = System.nanoTime();
                    double ms = n == 1 ? 0 : allReduceMs(nccl, comms, out, tokens);
                    if (it >= 0) {
                        experts[it] = (b - a) / 1e6;
                        reduce[it] = ms;
                    }
                }
                Arrays.sort(experts);
                Arrays.sort(reduce);
                double e = experts[iterations / 2];
                double r = reduce[iterations / 2];
                double bytes = 4.0 * tokens * HIDDEN;
                double bus = n == 1 ? Double.NaN : 2.0 * (n - 1) / n * bytes / (r * 1e6);
                double tps = tokens / ((e + r) / 1e3);
                if (n == 1) {
                    single[bi] = tps;
                }
                System.out.printf("%6d %3d %12.3f %14.3f %14.1f %12.0f %12.2f%n", tokens, n, e, r, bus, tps,
                        tps / single[bi]);
            }
        } finally {
            for (Experts s : slices) {
                s.close();
            }
            for (NcclComm c : comms) {
                c.close();
            }
            pool.shutdownNow();
        }
    }

    /**
     * The outputs copied to their devices, then one all-reduce (sum) over every device's communicator in one group
     * from this thread (communicators of ncclCommInitAll), timed from the group's launch to the last stream's end.
     */
    private static double allReduceMs(Nccl nccl, List<NcclComm> comms, float[][] out, int tokens) {
        int n = comms.size();
        long bytes = 4L * tokens * HIDDEN;
        List<CudaContext> ctxs = new ArrayList<>();
        List<CudaStream> streams = new ArrayList<>();
        List<DeviceBuffer> bufs = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            for (int d = 0; d < n; d++) {
                CudaContext ctx = CudaRuntime.open(d);
                ctxs.add(ctx);
                streams.add(ctx.createStream());
                DeviceBuffer buf = ctx.allocate(bytes);
                bufs.add(buf);
                buf.copyFrom(arena.allocateFrom(ValueLayout.JAVA_FLOAT, out[d]));
            }
            long a = System.nanoTime();
            try (NcclGroup group = nccl.group()) {
                for (int d = 0; d < n; d++) {
                    comms.get(d).allReduce(bufs.get(d), bufs.get(d), (long) tokens * HIDDEN, NcclDataType.FLOAT32,
                            NcclReduction.SUM, streams.get(d));
                }
            }
            for (int d = 0; d < n; d++) {
                ctxs.get(d).makeCurrent();
                streams.get(d).synchronize();
            }
            return (System.nanoTime() - a) / 1e6;
        } finally {
            for (int d = 0; d < ctxs.size(); d++) {
                ctxs.get(d).makeCurrent();
                if (d < bufs.size()) {
                    bufs.get(d).close();
                }
                if (d < streams.size()) {
                    streams.get(d).close();
                }
                ctxs.get(d).close();
            }
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
