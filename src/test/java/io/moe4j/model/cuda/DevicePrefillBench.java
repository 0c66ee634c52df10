package io.moe4j.model.cuda;

import io.moe4j.config.ModelConfig;
import io.moe4j.model.DecoderConfig;
import io.moe4j.model.ModelOptions;
import io.moe4j.safetensors.Checkpoint;
import java.nio.file.Path;
import java.util.stream.IntStream;

/**
 * Prefill speed of the decoder resident on the GPU on a checkpoint written before ({@code moe bench --model-preset
 * gpt-oss-20b --write-only}, given as {@code -Dmoe4j.bench.dir}): one untimed prompt of the full length (kernels
 * compiled, buffers grown), then timed prompts, then one prompt with the phase profile on (each phase waits for the
 * device, so it shows where the host waits: attention, router logits to the host, experts, head).
 *
 * <p>{@code java ... io.moe4j.model.cuda.DevicePrefillBench [tokens=2048] [rounds=3] [after=0]}: with {@code after}
 * positions already in the cache (a later turn of a conversation, written once, untimed); {@code
 * -Dmoe4j.bench.phases=false} leaves out the profiled prompt (a kernel timeline then ends with a timed one). With
 * {@code -Dmoe4j.bench.sequences=N} the prompt is also timed as N sequences of tokens / N each in one step (as a server
 * steps several joining prompts), after the single prompt's rounds and before the profiled one.
 */
public final class DevicePrefillBench {
    private DevicePrefillBench() {
    }

    /** The prompt cut into {@code sequences} fresh sequences stepped together: one untimed step, then timed ones. */
    private static void stepped(DeviceModel model, int[] prompt, int sequences, int rounds) {
        int each = prompt.length / sequences;
        for (int r = -1; r < rounds; r++) {
            java.util.List<io.moe4j.model.SequenceState> seqs = new java.util.ArrayList<>();
            java.util.List<int[]> tokens = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < sequences; i++) {
                    seqs.add(model.newSequence());
                    tokens.add(java.util.Arrays.copyOfRange(prompt, i * each, (i + 1) * each));
                }
                long a = System.nanoTime();
                model.step(seqs, tokens, new long[sequences], new io.moe4j.model.TokenDraw[sequences]);
                double sec = (System.nanoTime() - a) / 1e9;
                if (r >= 0) {
                    System.out.printf("prefill %d sequences of %d tokens in one step: %.3f s = %.0f tokens/s%n",
                            sequences, each, sec, sequences * each / sec);
                }
            } finally {
                seqs.forEach(io.moe4j.model.SequenceState::close);
            }
        }
    }

    public static void main(String[] args) {
        int tokens = args.length > 0 ? Integer.parseInt(args[0]) : 2048;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int after = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        String given = System.getProperty("moe4j.bench.dir");
        if (given == null) {
            throw new IllegalArgumentException("-Dmoe4j.bench.dir=DIR names the checkpoint (moe bench --write-only)");
        }
        Path dir = Path.of(given);
        DecoderConfig config = DecoderConfig.of(ModelConfig.load(dir));
        int vocab = config.vocab();
        int[] prompt = IntStream.range(0, tokens).map(i -> 1 + (i * 7919) % (vocab - 1)).toArray();
        try (Checkpoint checkpoint = Checkpoint.open(dir);
                DeviceModel model = DeviceModel.load(config, checkpoint, ModelOptions.defaults(),
                        Math.max(4096, after + tokens));
                DeviceSequence s = (DeviceSequence) model.newSequence()) {
            if (after > 0) {
                int[] earlier = IntStream.range(0, after).map(i -> 1 + (i * 104729) % (vocab - 1)).toArray();
                for (int at = 0; at < after; at += 4096) {
                    s.forward(java.util.Arrays.copyOfRange(earlier, at, Math.min(after, at + 4096)), at, false);
                }
            }
            long a = System.nanoTime();
            s.forward(prompt, after, false);
            System.out.printf("prefill %d tokens, first (compiles kernels, grows buffers): %.3f s%n", tokens,
                    (System.nanoTime() - a) / 1e9);
            for (int r = 0; r < rounds; r++) {
                a = System.nanoTime();
                s.forward(prompt, after, false);
                double sec = (System.nanoTime() - a) / 1e9;
                System.out.printf("prefill %d tokens after %d: %.3f s = %.0f tokens/s%n", tokens, after, sec,
                        tokens / sec);
            }
            int sequences = Integer.getInteger("moe4j.bench.sequences", 1);
            if (sequences > 1) {
                stepped(model, prompt, sequences, rounds);
            }
            if (Boolean.parseBoolean(System.getProperty("moe4j.bench.phases", "true"))) {
                s.profile(true);
                a = System.nanoTime();
                s.forward(prompt, after, false);
                double ms = (System.nanoTime() - a) / 1e6;
                long[] nanos = s.profile();
                s.profile(false);
                StringBuilder line = new StringBuilder(String.format("profiled prefill %.1f ms:", ms));
                for (int i = 0; i < nanos.length; i++) {
                    if (nanos[i] > 0) {
                        line.append(String.format(" %s %.1f ms;", DeviceSequence.PHASES[i], nanos[i] / 1e6));
                    }
                }
                System.out.println(line);
            }
        }
    }
}
