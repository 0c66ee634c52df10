package io.moe4j.model.cuda;

import io.moe4j.model.Logits;
import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.IntStream;

/**
 * Batch-1 greedy decode of the decoder resident on the GPU after prompts of several lengths, on a checkpoint written
 * before ({@code moe bench --model-preset gpt-oss-20b --write-only}, given as {@code -Dmoe4j.bench.dir}): for each
 * length a fresh session takes the prompt, then 8 untimed steps (the step's graph recorded), then the median of the
 * timed ones. Where {@link DeviceModelBench} decodes after 8 tokens, this shows what the attention over a long span
 * adds to a step.
 *
 * <p>{@code java ... io.moe4j.model.cuda.DeviceDecodeBench [positions=1024,4096,8000] [steps=24]}
 */
public final class DeviceDecodeBench {
    private DeviceDecodeBench() {
    }

    public static void main(String[] args) {
        int[] lengths = Arrays.stream((args.length > 0 ? args[0] : "1024,4096,8000").split(","))
                .mapToInt(Integer::parseInt).toArray();
        int steps = args.length > 1 ? Integer.parseInt(args[1]) : 24;
        String given = System.getProperty("moe4j.bench.dir");
        if (given == null) {
            throw new IllegalArgumentException("-Dmoe4j.bench.dir=DIR names the checkpoint (moe bench --write-only)");
        }
        int longest = Arrays.stream(lengths).max().orElse(0);
        ModelOptions options = ModelOptions.defaults().withBackend(ModelOptions.CUDA)
                .withContextLimit(longest + steps + 16);
        try (Model model = Model.load(Path.of(given), options)) {
            int vocab = model.config().vocab();
            for (int length : lengths) {
                int[] prompt = IntStream.range(0, length).map(i -> 1 + (i * 7919) % (vocab - 1)).toArray();
                try (Session s = model.newSession()) {
                    float[] logits = s.prefillLast(prompt);
                    int next = Logits.argmax(logits, 0, logits.length);
                    for (int i = 0; i < 8; i++) {
                        next = s.decodeGreedy(next);
                    }
                    double[] ms = new double[steps];
                    for (int i = 0; i < steps; i++) {
                        long a = System.nanoTime();
                        next = s.decodeGreedy(next);
                        ms[i] = (System.nanoTime() - a) / 1e6;
                    }
                    Arrays.sort(ms);
                    System.out.printf("decode batch 1, greedy, after %d positions: median %.3f ms a token (min %.3f,"
                            + " max %.3f) = %.1f tokens/s%n", length, ms[steps / 2], ms[0], ms[steps - 1],
                            1e3 / ms[steps / 2]);
                }
            }
        }
    }
}
