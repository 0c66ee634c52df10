package io.moe4j.cli;

import io.moe4j.layer.MoeLayer;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.layer.MoeOutput;
import io.moe4j.routing.Routing;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * {@code moe demo}: the README's main job. Writes a gpt-oss-20b-shaped MXFP4 layer in the real gpt-oss format,
 * loads it through the normal path, runs a batch on the backend the oracle picks, checks it against the exact
 * emulation backend and prints what it found.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Run a gpt-oss-20b-shaped MXFP4 MoE layer (random weights, real format) and check it against emulation.")
final class DemoCommand implements java.util.concurrent.Callable<Integer> {
    @Option(names = "--tokens", defaultValue = "4", description = "tokens in the batch (default: ${DEFAULT-VALUE})")
    int tokens;

    @Option(names = "--backend", defaultValue = "auto", description = "backend to demonstrate (default: ${DEFAULT-VALUE})")
    String backend;

    @Option(names = "--threads", description = "CPU threads (default: all cores)")
    Integer threads;

    @Option(names = "--keep", description = "keep the generated checkpoint in this directory instead of a temp dir")
    Path keep;

    @Override
    public Integer call() throws IOException {
        SyntheticGptOss.Shape shape = SyntheticGptOss.Shape.GPT_OSS_20B;
        Path dir = keep != null ? keep : Files.createTempDirectory("moe4j-demo");
        try {
            long total = checkpointBytes(shape);
            try (ProgressBar pb = bar("writing gpt-oss MXFP4 layer", total)) {
                SyntheticGptOss.write(dir, shape, 20261121L, pb::stepBy);
            }
            MoeLayerOptions options = MoeLayerOptions.defaults().withBackend(backend);
            if (threads != null) {
                options = options.withThreads(threads);
            }
            float[] x = SyntheticGptOss.activations(tokens, shape.hidden(), 7);

            Measured fast;
            try (MoeLayer layer = MoeLayer.load(dir, 0, options)) {
                fast = measure(layer, x, "running on " + layer.backend().name());
                System.out.printf("%nformat   : %s%n", layer.weights().scheme());
                System.out.printf("backend  : %s%n", layer.selection().logLine());
            }
            Measured exact;
            if (fast.backendName.equals("emulation")) {
                exact = fast;
            } else {
                try (MoeLayer reference = MoeLayer.load(dir, 0, options.withBackend("emulation"))) {
                    exact = measure(reference, x, "checking against emulation");
                }
            }
            double maxErr = 0;
            double maxRef = 0;
            for (int i = 0; i < x.length; i++) {
                maxErr = Math.max(maxErr, Math.abs(fast.out.output()[i] - exact.out.output()[i]));
                maxRef = Math.max(maxRef, Math.abs(exact.out.output()[i]));
            }
            System.out.printf("shape    : %d experts, top-%d, H = %d, I = %d; %d tokens%n",
                    shape.experts(), shape.topK(), shape.hidden(), shape.intermediate(), tokens);
            System.out.printf("%-10s %12s %12s %14s%n", "backend", "ms/call", "tokens/s", "weights GB/s");
            fast.print();
            if (exact != fast) {
                exact.print();
                System.out.printf("speed-up over emulation: %.1f×%n", exact.seconds / fast.seconds);
            }
            System.out.printf("max |error| vs emulation: %.3g (output max |y| %.3g)%n", maxErr, maxRef);
            return 0;
        } finally {
            if (keep == null) {
                deleteTree(dir);
            }
        }
    }

    private record Measured(String backendName, MoeOutput out, double seconds, long weightBytes, int tokens) {
        void print() {
            System.out.printf("%-10s %12.2f %12.1f %14.2f%n", backendName, seconds * 1e3, tokens / seconds,
                    weightBytes / seconds / 1e9);
        }
    }

    private static Measured measure(MoeLayer layer, float[] x, String what) {
        int t = x.length / layer.config().hidden();
        int iterations = layer.backend().name().equals("emulation") ? 1 : 10;
        MoeOutput out = null;
        long best = Long.MAX_VALUE;
        try (ProgressBar pb = bar(what, iterations + 1)) {
            out = layer.forward(x, t); // warm-up: JIT and page-in of the mapped weights
            pb.step();
            for (int i = 0; i < iterations; i++) {
                long t0 = System.nanoTime();
                out = layer.forward(x, t);
                best = Math.min(best, System.nanoTime() - t0);
                pb.step();
            }
        }
        long bytes = distinctExperts(out.routing()) * layer.weights().bytesPerExpert();
        return new Measured(layer.backend().name(), out, best / 1e9, bytes, t);
    }

    private static long distinctExperts(Routing r) {
        BitSet used = new BitSet();
        for (int id : r.ids()) {
            used.set(id);
        }
        return used.cardinality();
    }

    private static long checkpointBytes(SyntheticGptOss.Shape s) {
        long e = s.experts();
        long codes = e * 2 * s.intermediate() * s.hidden() / 2 + e * s.hidden() * s.intermediate() / 2;
        return codes + codes / 16; // one E8M0 scale byte per 32 codes (16 code bytes)
    }

    static ProgressBar bar(String task, long max) {
        return Progress.bar(task, max);
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
