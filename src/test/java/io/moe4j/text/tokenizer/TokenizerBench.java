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
 * mvn -o -q test-compile
 * java -cp target/classes:target/test-classes:$(cat cp.txt) io.moe4j.text.tokenizer.TokenizerBench ../shared [corpus files...]
 * </pre>
 * The corpus defaults to this repository's Markdown and Java sources (English prose and code), about 1 MB of text.
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
            Tokenizer tokenizer = Tokenizer.load(dir);
            double firstLoad = (System.nanoTime() - t0) / 1e9;
            double bestLoad = Double.MAX_VALUE;
            for (int i = 0; i < 3; i++) {
                long t = System.nanoTime();
                tokenizer = Tokenizer.load(dir);
                bestLoad = Math.min(bestLoad, (System.nanoTime() - t) / 1e9);
            }
            // The first pass over the corpus fills the word cache; later passes show the steady state.
            long t1 = System.nanoTime();
            int[] ids = tokenizer.encode(corpus);
            double cold = (System.nanoTime() - t1) / 1e9;
            double warm = Double.MAX_VALUE;
            for (int i = 0; i < 5; i++) {
                long t = System.nanoTime();
                ids = tokenizer.encode(corpus);
                warm = Math.min(warm, (System.nanoTime() - t) / 1e9);
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
            System.out.printf("%-12s vocab %,7d  load %.2f s (first, cold JVM) %.2f s (best of 3)  tokens %,d  "
                            + "encode %.1f MB/s (first pass) %.1f MB/s (%,.0f tokens/s, warm)  decode %.0f MB/s%n",
                    name, tokenizer.vocabSize(), firstLoad, bestLoad, ids.length, bytes / cold / 1e6,
                    bytes / warm / 1e6, ids.length / warm, bytes / decode / 1e6);
        }
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
