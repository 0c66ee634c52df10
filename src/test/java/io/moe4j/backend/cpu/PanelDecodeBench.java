package io.moe4j.backend.cpu;

import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertWeights;

import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;

/**
 * Decodes every panel of a w13 stack (2 experts, H 1024, I 512) with {@link VectorPanelDecoder}, for each
 * synthetic scheme, and prints the time and the heap bytes allocated per panel on this thread once the JIT has
 * settled. The bytes must be 0: a vector the JIT could not keep in registers is allocated on every word (the INT4
 * decoder did that, 128 bytes a word; docs/log.md), which no unit test sees because the results stay right.
 *
 * <p>Usage: {@code java --add-modules jdk.incubator.vector -cp target/moe4j.jar
 * io.moe4j.backend.cpu.PanelDecodeBench [scheme]} (cli names, e.g. {@code w4a16}; default every scheme).
 */
public final class PanelDecodeBench {
    private static final int ROUNDS = 12;
    private static final int PASSES = 40;

    private PanelDecodeBench() {
    }

    public static void main(String[] args) {
        if (!(ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean threads)) {
            throw new IllegalStateException("this JVM does not count allocated bytes per thread");
        }
        SyntheticWeights.Shape shape = new SyntheticWeights.Shape(2, 1024, 512, GateLayout.CONCATENATED,
                Activation.SILU_AND_MUL, false);
        System.out.printf("%-16s %-10s %10s %12s%n", "scheme", "codec", "ns/panel", "bytes/panel");
        for (SyntheticScheme scheme : SyntheticScheme.values()) {
            if (args.length > 0 && !scheme.cliName().equals(args[0])) {
                continue;
            }
            try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(1)) {
                ExpertWeights w = SyntheticWeights.generate(scheme, shape, 1, arena, b -> {
                });
                PanelMatrix m = PanelPacker.pack(w.w13(), arena, pool);
                Scratch s = new Scratch();
                s.fit(m);
                double ns = 0;
                double bytes = 0;
                for (int round = 0; round < ROUNDS; round++) { // the last round counts: compiled by then
                    long a0 = threads.getCurrentThreadAllocatedBytes();
                    long t0 = System.nanoTime();
                    for (int pass = 0; pass < PASSES; pass++) {
                        for (int e = 0; e < shape.experts(); e++) {
                            for (int p = 0; p < m.panels(); p++) {
                                VectorPanelDecoder.decode(m, e, p, s, s.panel);
                            }
                        }
                    }
                    long t1 = System.nanoTime();
                    long a1 = threads.getCurrentThreadAllocatedBytes();
                    double panels = (double) PASSES * shape.experts() * m.panels();
                    ns = (t1 - t0) / panels;
                    bytes = (a1 - a0) / panels;
                }
                System.out.printf("%-16s %-10s %10.0f %12.1f%n", scheme.cliName(), m.codec(), ns, bytes);
            }
        }
    }
}
