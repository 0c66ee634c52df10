package io.moe4j.testing;

import java.nio.file.Path;

/**
 * Writes one of the random test models to a directory, for runs by hand ({@code moe serve --model DIR}, load runs):
 * <pre>java -cp target/classes:target/test-classes:$(cat cp.txt) io.moe4j.testing.WriteRandomModel qwen3|gpt-oss DIR [SEED]</pre>
 * The tokenizer fixtures are read from {@code -Dmoe4j.shared} (default {@code ../shared}).
 */
public final class WriteRandomModel {
    private WriteRandomModel() {
    }

    public static void main(String[] args) {
        if (args.length < 2) {
            System.err.println("usage: WriteRandomModel qwen3|gpt-oss DIR [SEED]");
            System.exit(2);
        }
        Path dir = Path.of(args[1]);
        long seed = args.length > 2 ? Long.parseLong(args[2]) : 1;
        Path written = switch (args[0]) {
            case "qwen3" -> RandomModels.qwen3(dir, seed);
            case "gpt-oss" -> RandomModels.gptOss(dir, seed);
            default -> throw new IllegalArgumentException("unknown family " + args[0] + " (qwen3 or gpt-oss)");
        };
        System.out.println(written);
    }
}
