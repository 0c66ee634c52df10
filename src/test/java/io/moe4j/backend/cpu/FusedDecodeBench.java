package io.moe4j.backend.cpu;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.quant.ExpertWeights;

import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.util.Random;

/**
 * Times the fused one-token kernel ({@link FusedGemv#multiply}) on every panel of a w13 stack (2 experts, H 1024,
 * I 512: 1024 rows of 1024 columns an expert, held in cache), for each synthetic scheme, single-threaded, and prints
 * the best round in G multiply-adds/s and the heap bytes allocated per panel (must be 0: a vector the JIT kept on the
 * heap shows here first). G multiply-adds/s compare across vector widths (an 8-row panel at 256 bits, 16 rows at
 * 512), which ns per panel do not. The figures of docs/cpu-decode.md's kernel table come from here.
 *
 * <p>Usage: {@code bin/bench FusedDecodeBench [tokens] [--int8] [--experts=N] [scheme...]} (cli names, e.g.
 * {@code fp8-channel}; default one token, every scheme); {@code --int8} times the int8-activation kernels
 * ({@link Int8Kernels}) instead, for the schemes they take; {@code --experts=N} (default 2) spreads the panels over N
 * experts, so that with N = 256 (128 MB of MXFP4) every pass streams them from memory instead of the cache.
 *
 * <p>For a scheme's figure, name that scheme alone: several in one JVM share the kernels' profiles, and on the Zen 5
 * VM the int8 kernels compiled for earlier schemes kept later ones' vectors on the heap (w8a16-group with
 * {@code --int8}: 1.4 G multiply-adds/s after the other schemes, 26-29 alone; docs/cpu-decode.md).
 */
public final class FusedDecodeBench {
    private static final int ROUNDS = 40;
    private static final int PASSES = 20;

    private FusedDecodeBench() {
    }

    public static void main(String[] args) {
        if (!(ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean threads)) {
            throw new IllegalStateException("this JVM does not count allocated bytes per thread");
        }
        int tokens = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        java.util.Set<String> only = new java.util.HashSet<>(java.util.Arrays.asList(args).subList(Math.min(1, args.length), args.length));
        boolean int8 = only.remove("--int8");
        int experts = 2;
        for (String a : java.util.List.copyOf(only)) {
            if (a.startsWith("--experts=")) {
                experts = Integer.parseInt(a.substring("--experts=".length()));
                only.remove(a);
            }
        }
        // the same number of panels a round whatever the expert count
        int passes = Math.max(1, PASSES * 2 / experts);
        CpuKernels int8Kernels = int8 ? KernelSelection.int8(new VectorKernels()) : null;
        SyntheticWeights.Shape shape = new SyntheticWeights.Shape(experts, 1024, 512, GateLayout.CONCATENATED,
                Activation.SILU_AND_MUL, false);
        System.out.printf("%-16s %-10s %6s %10s %10s %12s%n", "scheme", "codec", "rows", "GMAC/s", "ns/8x1024", "bytes/panel");
        for (SyntheticScheme scheme : SyntheticScheme.values()) {
            if (!only.isEmpty() && !only.contains(scheme.cliName())) {
                continue;
            }
            try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(1)) {
                ExpertWeights w = SyntheticWeights.generate(scheme, shape, 1, arena, b -> {
                });
                if (w.w13().groupParts() != 1) {
                    // gate and up with act-order maps of their own pack as experts of their own: same kernel as
                    // w4a16-act-order, which this bench times
                    continue;
                }
                PanelMatrix m = PanelPacker.pack(w.w13(), arena, pool);
                Scratch s = new Scratch();
                s.fit(m);
                Random rnd = new Random(7);
                float[] x = new float[m.cols() * tokens];
                for (int i = 0; i < x.length; i++) {
                    x[i] = (float) rnd.nextGaussian();
                }
                if (int8 && Int8Support.refusal(w.scheme(), java.util.Optional.empty()).isPresent()) {
                    continue;
                }
                Inputs[] in = new Inputs[shape.experts()];
                for (int e = 0; e < in.length; e++) {
                    in[e] = int8 ? int8Kernels.prepare(m, e, x, 0, tokens)
                            : FusedInputs.of(m, e, Inputs.gather(m, e, x, 0, tokens));
                }
                float[] y = new float[m.rows() * tokens];
                double best = Double.MAX_VALUE;
                double bytes = 0;
                for (int round = 0; round < ROUNDS; round++) {
                    long a0 = threads.getCurrentThreadAllocatedBytes();
                    long t0 = System.nanoTime();
                    for (int pass = 0; pass < passes; pass++) {
                        for (int e = 0; e < shape.experts(); e++) {
                            if (int8) {
                                int8Kernels.multiply(m, e, 0, m.rows(), in[e], y, 0, m.rows(), s);
                            } else {
                                FusedGemv.multiply(m, e, 0, m.rows(), (FusedInputs) in[e], y, 0, m.rows(), s);
                            }
                        }
                    }
                    long t1 = System.nanoTime();
                    long a1 = threads.getCurrentThreadAllocatedBytes();
                    double panels = (double) passes * shape.experts() * m.panels();
                    best = Math.min(best, (t1 - t0) / panels);
                    bytes = (a1 - a0) / panels;
                }
                int lanes = PanelMatrix.LANES;
                double macs = (double) lanes * m.cols() * tokens;
                System.out.printf("%-16s %-10s %6d %10.2f %10.0f %12.1f%n", scheme.cliName(), m.codec(), lanes,
                        macs / best, best * (8.0 / lanes) * (1024.0 / m.cols()), bytes);
            }
        }
    }
}
