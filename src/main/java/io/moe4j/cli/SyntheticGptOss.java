package io.moe4j.cli;

import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsWriter;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.function.LongConsumer;

/**
 * Writes a one-layer gpt-oss checkpoint in the real on-disk format (config.json with
 * {@code quant_method: mxfp4}; {@code *_blocks} / {@code *_scales} U8 expert tensors; BF16 router and biases)
 * with random weights, through the project's own writer. The demo and benchmarks load it through the normal path.
 */
public final class SyntheticGptOss {
    public record Shape(int experts, int topK, int hidden, int intermediate) {
        public static final Shape GPT_OSS_20B = new Shape(32, 4, 2880, 2880);
    }

    private SyntheticGptOss() {
    }

    /** Writes config.json and model.safetensors into {@code dir}; {@code progress} gets bytes generated. */
    public static void write(Path dir, Shape s, long seed, LongConsumer progress) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 1,
                 "hidden_size": %d, "intermediate_size": %d, "num_local_experts": %d, "experts_per_token": %d,
                 "num_experts_per_tok": %d, "swiglu_limit": 7.0, "torch_dtype": "bfloat16",
                 "quantization_config": {"quant_method": "mxfp4",
                   "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}
                """.formatted(s.hidden(), s.intermediate(), s.experts(), s.topK(), s.topK()));
        SplittableRandom rnd = new SplittableRandom(seed);
        String p = "model.layers.0.mlp.";
        int e = s.experts();
        int h = s.hidden();
        int i2 = 2 * s.intermediate();
        try (Arena arena = Arena.ofConfined()) {
            SafetensorsWriter w = new SafetensorsWriter().metadata("format", "pt");
            w.addBf16(p + "router.weight", new long[] {e, h}, gaussian(rnd, e * h, 1.0 / Math.sqrt(h)));
            w.addBf16(p + "router.bias", new long[] {e}, gaussian(rnd, e, 0.1));
            w.addBf16(p + "experts.gate_up_proj_bias", new long[] {e, i2}, gaussian(rnd, e * i2, 0.05));
            w.addBf16(p + "experts.down_proj_bias", new long[] {e, h}, gaussian(rnd, e * h, 0.05));
            // Scales near 2^-6: with E2M1 values up to 6 and K = 2880 inputs this keeps activations O(1).
            w.add(p + "experts.gate_up_proj_blocks", DType.U8, new long[] {e, i2, h / 32, 16},
                    randomBytes(arena, (long) e * i2 * h / 2, rnd, -1, progress));
            w.add(p + "experts.gate_up_proj_scales", DType.U8, new long[] {e, i2, h / 32},
                    randomBytes(arena, (long) e * i2 * h / 32, rnd, 127 - 7, progress));
            w.add(p + "experts.down_proj_blocks", DType.U8, new long[] {e, h, s.intermediate() / 32, 16},
                    randomBytes(arena, (long) e * h * s.intermediate() / 2, rnd, -1, progress));
            w.add(p + "experts.down_proj_scales", DType.U8, new long[] {e, h, s.intermediate() / 32},
                    randomBytes(arena, (long) e * h * s.intermediate() / 32, rnd, 127 - 7, progress));
            w.write(dir.resolve("model.safetensors"));
        }
    }

    /** Random bytes, or with {@code scaleCenter ≥ 0} E8M0 codes spread ±1 around it. */
    private static MemorySegment randomBytes(Arena arena, long n, SplittableRandom rnd, int scaleCenter, LongConsumer progress) {
        MemorySegment seg = arena.allocate(n, 8);
        long chunk = 1 << 24;
        for (long start = 0; start < n; start += chunk) {
            long end = Math.min(n, start + chunk);
            long i = start;
            for (; i + 8 <= end; i += 8) {
                long v = rnd.nextLong();
                if (scaleCenter >= 0) {
                    long codes = 0;
                    for (int b = 0; b < 8; b++) {
                        codes |= (long) (scaleCenter - 1 + (int) Long.remainderUnsigned(v >>> (8 * b) & 0xFF, 3)) << (8 * b);
                    }
                    v = codes;
                }
                seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, v);
            }
            for (; i < end; i++) {
                seg.set(ValueLayout.JAVA_BYTE, i, (byte) (scaleCenter >= 0 ? scaleCenter : rnd.nextInt(256)));
            }
            progress.accept(end - start);
        }
        return seg;
    }

    private static float[] gaussian(SplittableRandom rnd, int n, double std) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            double u1 = rnd.nextDouble();
            double u2 = rnd.nextDouble();
            out[i] = (float) (std * Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2));
        }
        return out;
    }

    /** Random activations [tokens, hidden] of unit scale. */
    public static float[] activations(int tokens, int hidden, long seed) {
        return gaussian(new SplittableRandom(seed), tokens * hidden, 1.0);
    }
}
