package io.moe4j.text.tokenizer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Load time and encode/decode throughput of the three reference tokenizers.
 *
 * <pre>
 * mvn -o -q test-compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt
 * java -cp target/classes:target/test-classes:$(cat target/cp.txt) io.moe4j.text.tokenizer.TokenizerBench ../shared [corpus files...]
 * </pre>
 * The corpus defaults to this repository's README and Java sources (English prose and code), about 1 MB of text.
 * Beside wall time it prints the CPU time of the process (all threads: parsing, GC, JIT) for loading and of the
 * calling thread for encoding, which stay meaningful on a machine shared with other work.
 */
public final class TokenizerBench {
    private TokenizerBench() {
    }

    public static void main(String[] args) throws IOException {
        Path shared = Path.of(args.length > 0 ? args[0] : "../shared");
        String corpus = corpus(args);
        int bytes = corpus.getBytes(StandardCharsets.UTF_8).length;
        System.out.printf("corpus: %,d chars, %,d UTF-8 bytes%n", corpus.length(), bytes);
        for (String name : TokenizerFixtures.NAMES) {
            Path dir = shared.resolve("tokenizers").resolve(name);
            long t0 = System.nanoTime();
            long p0 = processCpu();
            Tokenizer tokenizer = Tokenizer.load(dir);
            double firstLoad = (System.nanoTime() - t0) / 1e9;
            double firstLoadCpu = (processCpu() - p0) / 1e9;
            double bestLoad = Double.MAX_VALUE;
            double bestLoadCpu = Double.MAX_VALUE;
            for (int i = 0; i < 3; i++) {
                long t = System.nanoTime();
                long p = processCpu();
                tokenizer = Tokenizer.load(dir);
                bestLoad = Math.min(bestLoad, (System.nanoTime() - t) / 1e9);
                bestLoadCpu = Math.min(bestLoadCpu, (processCpu() - p) / 1e9);
            }
            // The first pass over the corpus fills the word cache; later passes show the steady state.
            long t1 = System.nanoTime();
            int[] ids = tokenizer.encode(corpus);
            double cold = (System.nanoTime() - t1) / 1e9;
            double warm = Double.MAX_VALUE;
            double warmCpu = Double.MAX_VALUE;
            for (int i = 0; i < 5; i++) {
                long t = System.nanoTime();
                long c = THREADS.getCurrentThreadCpuTime();
                ids = tokenizer.encode(corpus);
                warm = Math.min(warm, (System.nanoTime() - t) / 1e9);
                warmCpu = Math.min(warmCpu, (THREADS.getCurrentThreadCpuTime() - c) / 1e9);
            }
            double decode = Double.MAX_VALUE;
            for (int i = 0; i < 5; i++) {
                long t = System.nanoTime();
                String back = tokenizer.decode(ids);
                decode = Math.min(decode, (System.nanoTime() - t) / 1e9);
                if (!back.equals(corpus)) {
                    throw new IllegalStateException(name + ": the corpus does not round-trip");
                }
            }
            System.out.printf("%-12s vocab %,7d  load: first %.2f s (cpu %.2f s), best of 3 %.2f s (cpu %.2f s)%n",
                    name, tokenizer.vocabSize(), firstLoad, firstLoadCpu, bestLoad, bestLoadCpu);
            System.out.printf("%-12s tokens %,d  encode: first pass %.1f MB/s, warm %.1f MB/s = %,.0f tokens/s "
                            + "(by thread cpu %.1f MB/s = %,.0f tokens/s)  decode %.0f MB/s%n",
                    "", ids.length, bytes / cold / 1e6, bytes / warm / 1e6, ids.length / warm,
                    bytes / warmCpu / 1e6, ids.length / warmCpu, bytes / decode / 1e6);
        }
    }

    private static final java.lang.management.ThreadMXBean THREADS =
            java.lang.management.ManagementFactory.getThreadMXBean();

    private static long processCpu() {
        return ((com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static String corpus(String[] args) throws IOException {
        List<Path> files = new ArrayList<>();
        if (args.length > 1) {
            for (int i = 1; i < args.length; i++) {
                files.add(Path.of(args[i]));
            }
        } else {
            try (Stream<Path> walk = Files.walk(Path.of("src"))) {
                walk.filter(p -> p.toString().endsWith(".java")).sorted().forEach(files::add);
            }
            files.add(0, Path.of("README.md"));
        }
        StringBuilder text = new StringBuilder();
        for (Path f : files) {
            text.append(Files.readString(f)).append('\n');
            if (text.length() > 1_000_000) {
                break;
            }
        }
        return text.toString();
    }
}
