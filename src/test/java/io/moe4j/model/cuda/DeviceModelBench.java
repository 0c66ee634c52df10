package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.DeviceBandwidth;
import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.model.TokenDraw;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsWriter;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * Decode and prefill speed of the decoder resident on the GPU, on gpt-oss-20b shapes with synthetic weights (random
 * bf16 attention, embeddings and lm_head; random MXFP4 experts): writes the checkpoint (one shard a layer) to a
 * temporary directory, loads it with backend cuda, and reports batch-1 decode tokens/s and the bytes a token reads
 * against the device-to-device copy bandwidth measured in the same run.
 *
 * <p>{@code java ... io.moe4j.model.cuda.DeviceModelBench [layers=24] [decodeTokens=64] [prefillTokens=2048]};
 * {@code -Dmoe4j.bench.backend=cpu} runs the same on the host (a check of the synthetic checkpoint, not a bench).
 */
public final class DeviceModelBench {
    static final int HIDDEN = 2880;
    static final int HEADS = 64;
    static final int KV_HEADS = 8;
    static final int HEAD_DIM = 64;
    static final int EXPERTS = 32;
    static final int TOP_K = 4;
    static final int INTER = 2880;
    static final int VOCAB = 201088;
    static final int WINDOW = 128;

    private DeviceModelBench() {
    }

    /** Median ms a sampled decode step, the token drawn on the device or from logits read back to the host. */
    private static double sampledDecode(Model model, TokenDraw rule, int steps, boolean onDevice) {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(1);
        try (Session s = model.newSession()) {
            int next = argmax(s.prefillLast(new int[] {1, 2, 3, 4, 5, 6, 7, 8}));
            double[] ms = new double[steps];
            for (int i = -8; i < steps; i++) {
                TokenDraw d = new TokenDraw(rule.temperature(), rule.topK(), rule.topP(), rule.minP(),
                        rnd.nextDouble());
                long a = System.nanoTime();
                if (onDevice) {
                    next = s.decodeDrawn(next, d);
                } else {
                    float[] logits = s.decode(next);
                    next = d.pick(logits, 0, logits.length, null);
                }
                if (i >= 0) {
                    ms[i] = (System.nanoTime() - a) / 1e6;
                }
            }
            Arrays.sort(ms);
            return ms[ms.length / 2];
        }
    }

    public static void main(String[] args) throws IOException {
        int layers = args.length > 0 ? Integer.parseInt(args[0]) : 24;
        int decodeTokens = args.length > 1 ? Integer.parseInt(args[1]) : 64;
        int prefillTokens = args.length > 2 ? Integer.parseInt(args[2]) : 2048;
        long t0 = System.nanoTime();
        // -Dmoe4j.bench.dir: a gpt-oss-20b-shaped checkpoint written before (moe bench --model-preset gpt-oss-20b
        // --write-only), run as it is and kept, so that other programs can time the same weights
        String given = System.getProperty("moe4j.bench.dir");
        Path dir = given != null ? Path.of(given) : Files.createTempDirectory("moe4j-gptoss20b-synthetic");
        if (given != null) {
            layers = io.moe4j.config.ModelConfig.load(dir).numLayers();
            log(t0, "running the checkpoint in " + dir + " (" + layers + " layers)");
        } else {
            write(dir, layers);
            log(t0, "wrote the synthetic checkpoint (" + layers + " layers) to " + dir);
        }
        String backend = System.getProperty("moe4j.bench.backend", ModelOptions.CUDA); // cpu: a check of the writer
        double copy = backend.equals(ModelOptions.CUDA) ? DeviceBandwidth.copyGbps() : Double.NaN;
        log(t0, String.format("device-to-device copy: %.0f GB/s (read + written)", copy));
        ModelOptions options = ModelOptions.defaults().withBackend(backend).withContextLimit(4096);
        try (Model model = Model.load(dir, options)) {
            log(t0, "loaded on the device");
            try (Session s = model.newSession()) {
                float[] logits = s.prefillLast(new int[] {1, 2, 3, 4, 5, 6, 7, 8});
                for (int i = 0; i < 8; i++) {
                    logits = s.decode(argmax(logits)); // warm-up: kernels compiled and loaded, buffers grown
                }
                double[] ms = new double[decodeTokens];
                for (int i = 0; i < decodeTokens; i++) {
                    int next = argmax(logits);
                    long a = System.nanoTime();
                    logits = s.decode(next);
                    ms[i] = (System.nanoTime() - a) / 1e6;
                }
                Arrays.sort(ms);
                double median = ms[ms.length / 2];
                double bytes = bytesPerDecodedToken(layers);
                double limitMs = bytes / (copy * 1e9) * 1e3;
                System.out.printf("decode batch 1, %d tokens after %d: median %.3f ms/token (min %.3f, max %.3f) = %.1f"
                                + " tokens/s; %.3f GB read a token -> %.0f GB/s = %.1f%% of copy bandwidth (limit %.3f ms"
                                + " = %.0f tokens/s)%n", decodeTokens, s.position() - decodeTokens, median, ms[0],
                        ms[ms.length - 1], 1e3 / median, bytes / 1e9, bytes / median / 1e6,
                        100 * bytes / median / 1e6 / copy, limitMs, 1e3 / limitMs);
            }
            try (Session s = model.newSession()) { // the same with the device choosing the token (greedy generation)
                int next = argmax(s.prefillLast(new int[] {1, 2, 3, 4, 5, 6, 7, 8}));
                for (int i = 0; i < 8; i++) {
                    next = s.decodeGreedy(next);
                }
                double[] ms = new double[decodeTokens];
                boolean profiled = Integer.getInteger("moe4j.bench.profileBatch", 0) == 1;
                for (int i = 0; i < decodeTokens; i++) {
                    if (profiled && i == 0) {
                        io.moe4j.backend.cuda.driver.CudaDriver.get().cuProfilerStart();
                    }
                    long a = System.nanoTime();
                    next = s.decodeGreedy(next);
                    ms[i] = (System.nanoTime() - a) / 1e6;
                    if (profiled && i == 0) {
                        io.moe4j.backend.cuda.driver.CudaDriver.get().cuProfilerStop();
                    }
                }
                Arrays.sort(ms);
                double median = ms[ms.length / 2];
                double bytes = bytesPerDecodedToken(layers);
                System.out.printf("decode batch 1, greedy on the device (decodeGreedy): median %.3f ms/token = %.1f"
                        + " tokens/s; %.0f GB/s = %.1f%% of copy bandwidth%n", median, 1e3 / median,
                        bytes / median / 1e6, 100 * bytes / median / 1e6 / copy);
            }
            // sampled generation: the token drawn on the device (decodeDrawn) against the logits read back and drawn
            // on the host by the same rule, interleaved so both see the same machine
            for (TokenDraw rule : new TokenDraw[] {new TokenDraw(1.0, 0, 1, 0, 0), new TokenDraw(0.7, 0, 0.9, 0, 0),
                    new TokenDraw(0.7, 50, 1, 0, 0)}) {
                double device = sampledDecode(model, rule, decodeTokens, true);
                double host = sampledDecode(model, rule, decodeTokens, false);
                System.out.printf("decode batch 1, temperature %.1f top-k %d top-p %.1f: drawn on the device %.3f"
                        + " ms/token, logits to the host and drawn there %.3f ms/token%n", rule.temperature(),
                        rule.topK(), rule.topP(), device, host);
            }
            // -Dmoe4j.bench.batches=8,64 (default): the batch sizes timed; -Dmoe4j.bench.profileBatch=N: one step of
            // batch N (greedy) runs between cuProfilerStart and cuProfilerStop, for a profiler started with
            // collection off (ncu --profile-from-start off)
            for (String b : System.getProperty("moe4j.bench.batches", "8,64").split(",")) {
                int batch = Integer.parseInt(b.trim());
                decodeBatch(model, batch, decodeTokens, false);
                decodeBatch(model, batch, decodeTokens, true);
            }
            profile(dir, decodeTokens);
            if (prefillTokens > 0) {
                int[] prompt = IntStream.range(0, prefillTokens).map(i -> 1 + (i * 7919) % (VOCAB - 1)).toArray();
                try (Session s = model.newSession()) {
                    // one untimed prompt of the same length first: its tile GEMMs' kernels compile on first use
                    // (a cold prompt took ~0.7 s longer), and the buffers grow to its size
                    s.prefillLast(prompt);
                    double[] sec = new double[3];
                    for (int r = 0; r < sec.length; r++) {
                        s.reset();
                        long a = System.nanoTime();
                        s.prefillLast(prompt);
                        sec[r] = (System.nanoTime() - a) / 1e9;
                    }
                    Arrays.sort(sec);
                    System.out.printf("prefill %d tokens: %.3f s = %.0f tokens/s (median of 3, after one untimed)%n",
                            prefillTokens, sec[1], prefillTokens / sec[1]);
                }
            }
        } finally {
            if (given == null) {
                try (var files = Files.list(dir)) {
                    for (Path p : files.toList()) {
                        Files.delete(p);
                    }
                }
                Files.delete(dir);
            }
        }
    }

    /**
     * Continuous batching: {@code batch} sessions of different lengths (prompts of 8 to 23 tokens, or from
     * {@code -Dmoe4j.bench.batchPrompt=N} to N + 15: a server's chat requests start from ~80) stepped together with
     * {@link Model#step}, one token each a step; the median step gives tokens/s over the batch.
     */
    private static void decodeBatch(Model model, int batch, int steps, boolean greedy) {
        java.util.List<Session> sessions = new java.util.ArrayList<>();
        int shortest = shortestBatchPrompt();
        try {
            java.util.List<int[]> feed = new java.util.ArrayList<>();
            for (int i = 0; i < batch; i++) {
                Session s = model.newSession();
                sessions.add(s);
                int seed = i * 7919;
                int[] prompt = IntStream.range(0, shortest + i % 16).map(j -> 1 + (j * 31 + seed) % (VOCAB - 1))
                        .toArray();
                feed.add(new int[] {argmax(s.prefillLast(prompt))});
            }
            double[] ms = new double[steps];
            for (int step = -4; step < steps; step++) { // 4 warm-up steps: kernels loaded, the step recorded
                long a = System.nanoTime();
                TokenDraw[] draws = new TokenDraw[batch];
                java.util.Arrays.fill(draws, greedy ? TokenDraw.greedy() : null);
                boolean profiled = greedy && step == 0 && Integer.getInteger("moe4j.bench.profileBatch", 0) == batch;
                if (profiled) {
                    io.moe4j.backend.cuda.driver.CudaDriver.get().cuProfilerStart();
                }
                io.moe4j.model.StepOutput out = model.step(sessions, feed, draws);
                if (profiled) {
                    io.moe4j.backend.cuda.driver.CudaDriver.get().cuProfilerStop();
                }
                if (step >= 0) {
                    ms[step] = (System.nanoTime() - a) / 1e6;
                }
                for (int i = 0; i < batch; i++) {
                    feed.set(i, new int[] {greedy ? out.drawn()[i] : argmax(out.logits()[i])});
                }
            }
            Arrays.sort(ms);
            double median = ms[ms.length / 2];
            // the batch reads the attention, router and lm_head weights once and each distinct expert once: at most
            // every layer's top-k experts for each sequence (a bound; the bytes actually read are fewer)
            System.out.printf("decode batch %d (Model.step%s), %d steps: median %.3f ms a step (min %.3f, max %.3f) = %.0f"
                            + " tokens/s (%.1f tokens/s a sequence)%n", batch, greedy ? ", greedy on the device" : "", steps,
                    median, ms[0], ms[ms.length - 1], batch * 1e3 / median, 1e3 / median);
        } finally {
            sessions.forEach(Session::close);
        }
    }

    /**
     * Where a decode step's time goes: the same decode on a second load of the model, each phase timed on the host
     * with the device drained after it (so the phases add up to more than a step without profiling).
     */
    private static void profile(Path dir, int decodeTokens) {
        io.moe4j.model.DecoderConfig config = io.moe4j.model.DecoderConfig.of(io.moe4j.config.ModelConfig.load(dir));
        try (io.moe4j.safetensors.Checkpoint checkpoint = io.moe4j.safetensors.Checkpoint.open(dir);
                DeviceModel model = DeviceModel.load(config, checkpoint, ModelOptions.defaults(), 4096);
                DeviceSequence s = (DeviceSequence) model.newSequence()) {
            float[] logits = s.forward(new int[] {1, 2, 3, 4, 5, 6, 7, 8}, 0, false);
            long position = 8;
            for (int i = 0; i < 8; i++) {
                logits = s.forward(new int[] {argmax(logits)}, position++, false);
            }
            s.profile(true);
            long a = System.nanoTime();
            for (int i = 0; i < decodeTokens; i++) {
                logits = s.forward(new int[] {argmax(logits)}, position++, false);
            }
            double total = (System.nanoTime() - a) / 1e3 / decodeTokens;
            long[] nanos = s.profile();
            StringBuilder line = new StringBuilder(String.format("profiled decode step %.0f us:", total));
            for (int i = 0; i < nanos.length; i++) {
                if (nanos[i] > 0) {
                    line.append(String.format(" %s %.0f us;", DeviceSequence.PHASES[i], nanos[i] / 1e3 / decodeTokens));
                }
            }
            System.out.println(line);
            profileBatch(model, 64, decodeTokens / 4);
            if (model.routesOnDevice()) {
                System.out.printf("replayed alone: the whole decode step %.1f us%n", s.replayMicros(20));
            }
        }
    }

    /** The shortest prompt of a timed batch: {@code -Dmoe4j.bench.batchPrompt}, 8 unless set. */
    private static int shortestBatchPrompt() {
        return Integer.getInteger("moe4j.bench.batchPrompt", 8);
    }

    /** Where a batched decode step's time goes ({@link DeviceBatch#PHASES}), and its recorded graph replayed alone. */
    private static void profileBatch(DeviceModel model, int batch, int steps) {
        java.util.List<io.moe4j.model.SequenceState> seqs = new java.util.ArrayList<>();
        int shortest = shortestBatchPrompt();
        try {
            java.util.List<int[]> feed = new java.util.ArrayList<>();
            long[] starts = new long[batch];
            for (int i = 0; i < batch; i++) {
                io.moe4j.model.SequenceState s = model.newSequence();
                seqs.add(s);
                int[] prompt = IntStream.range(0, shortest + i % 16).map(j -> 1 + j * 131).toArray();
                feed.add(new int[] {argmax(s.forward(prompt, 0, false))});
                starts[i] = prompt.length;
            }
            DeviceBatch runner = model.batch();
            for (int step = -4; step < steps; step++) {
                if (step == 0) {
                    System.out.printf("batch %d step replayed alone: %.0f us%n", batch, runner.replayMicros(batch, 5));
                    runner.profile(true);
                }
                float[][] logits = model.step(seqs, feed, starts, new TokenDraw[batch]).logits();
                for (int i = 0; i < batch; i++) {
                    feed.set(i, new int[] {argmax(logits[i])});
                    starts[i]++;
                }
            }
            long[] nanos = runner.profile();
            runner.profile(false);
            StringBuilder line = new StringBuilder(String.format("profiled batch-%d step (eager):", batch));
            for (int i = 0; i < nanos.length; i++) {
                line.append(String.format(" %s %.0f us;", DeviceBatch.PHASES[i], nanos[i] / 1e3 / steps));
            }
            System.out.println(line);
        } finally {
            seqs.forEach(io.moe4j.model.SequenceState::close);
        }
    }

    /** Weights a decoded token reads: every layer's attention and router, its top-k experts, lm_head, one embedding row. */
    static double bytesPerDecodedToken(int layers) {
        double attention = 2.0 * HIDDEN * (HEADS * HEAD_DIM + 2 * KV_HEADS * HEAD_DIM) + 2.0 * HEADS * HEAD_DIM * HIDDEN;
        double router = 4.0 * EXPERTS * HIDDEN;
        double expert = 2.0 * INTER * (HIDDEN / 2 + HIDDEN / 32) + HIDDEN * (INTER / 2 + INTER / 32);
        return layers * (attention + router + TOP_K * expert) + 2.0 * VOCAB * HIDDEN + 2.0 * HIDDEN;
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }

    private static void log(long t0, String what) {
        System.out.printf("[%6.1f s] %s%n", (System.nanoTime() - t0) / 1e9, what);
    }

    private static void write(Path dir, int layers) throws IOException {
        Map<String, String> weightMap = new LinkedHashMap<>();
        StringBuilder types = new StringBuilder();
        for (int l = 0; l < layers; l++) {
            String file = "layer-" + l + ".safetensors";
            try (Arena arena = Arena.ofShared()) {
                SafetensorsWriter w = new SafetensorsWriter();
                String p = "model.layers." + l + ".";
                norm(w, arena, p + "input_layernorm.weight");
                norm(w, arena, p + "post_attention_layernorm.weight");
                linear(w, arena, p + "self_attn.q_proj", HEADS * HEAD_DIM, HIDDEN, l);
                linear(w, arena, p + "self_attn.k_proj", KV_HEADS * HEAD_DIM, HIDDEN, l + 100);
                linear(w, arena, p + "self_attn.v_proj", KV_HEADS * HEAD_DIM, HIDDEN, l + 200);
                linear(w, arena, p + "self_attn.o_proj", HIDDEN, HEADS * HEAD_DIM, l + 300);
                w.add(p + "self_attn.sinks", DType.BF16, new long[] {HEADS}, bf16(arena, HEADS, 0.5f, l + 400));
                linear(w, arena, p + "mlp.router", EXPERTS, HIDDEN, l + 500);
                experts(w, arena, p + "mlp.experts.gate_up_proj", 2 * INTER, HIDDEN, l + 600);
                experts(w, arena, p + "mlp.experts.down_proj", HIDDEN, INTER, l + 700);
                for (String name : namesOf(w)) {
                    weightMap.put(name, file);
                }
                w.write(dir.resolve(file));
            }
            types.append(l == 0 ? "" : ", ").append(l % 2 == 0 ? "\"sliding_attention\"" : "\"full_attention\"");
        }
        try (Arena arena = Arena.ofShared()) {
            SafetensorsWriter w = new SafetensorsWriter();
            w.add("model.embed_tokens.weight", DType.BF16, new long[] {VOCAB, HIDDEN},
                    bf16(arena, (long) VOCAB * HIDDEN, 0.05f, 900));
            w.add("lm_head.weight", DType.BF16, new long[] {VOCAB, HIDDEN}, bf16(arena, (long) VOCAB * HIDDEN, 0.03f, 901));
            norm(w, arena, "model.norm.weight");
            for (String name : namesOf(w)) {
                weightMap.put(name, "rest.safetensors");
            }
            w.write(dir.resolve("rest.safetensors"));
        }
        StringBuilder index = new StringBuilder("{\"metadata\": {}, \"weight_map\": {");
        int i = 0;
        for (var e : weightMap.entrySet()) {
            index.append(i++ == 0 ? "" : ", ").append('"').append(e.getKey()).append("\": \"").append(e.getValue())
                    .append('"');
        }
        Files.writeString(dir.resolve("model.safetensors.index.json"), index.append("}}").toString());
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": %d,
                 "num_hidden_layers": %d, "vocab_size": %d, "num_attention_heads": %d, "num_key_value_heads": %d,
                 "head_dim": %d, "num_local_experts": %d, "experts_per_token": %d, "num_experts_per_tok": %d,
                 "intermediate_size": %d, "sliding_window": %d, "layer_types": [%s], "rms_norm_eps": 1e-05,
                 "rope_theta": 150000, "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                 "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false},
                 "max_position_embeddings": 131072, "initial_context_length": 4096, "attention_bias": true,
                 "swiglu_limit": 7.0, "tie_word_embeddings": false, "hidden_act": "silu", "torch_dtype": "bfloat16",
                 "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn",
                 "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}
                """.formatted(HIDDEN, layers, VOCAB, HEADS, KV_HEADS, HEAD_DIM, EXPERTS, TOP_K, TOP_K, INTER, WINDOW,
                types));
    }

    private static java.util.List<String> namesOf(SafetensorsWriter w) {
        com.fasterxml.jackson.databind.JsonNode header;
        try {
            header = new com.fasterxml.jackson.databind.ObjectMapper().readTree(w.headerBytes());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        java.util.List<String> names = new java.util.ArrayList<>();
        header.fieldNames().forEachRemaining(n -> {
            if (!n.equals("__metadata__")) {
                names.add(n);
            }
        });
        return names;
    }

    private static void norm(SafetensorsWriter w, Arena arena, String name) {
        MemorySegment s = arena.allocate(2L * HIDDEN);
        for (int i = 0; i < HIDDEN; i++) {
            s.set(ValueLayout.JAVA_SHORT_UNALIGNED, 2L * i, (short) 0x3f80); // 1.0
        }
        w.add(name, DType.BF16, new long[] {HIDDEN}, s);
    }

    private static void linear(SafetensorsWriter w, Arena arena, String module, int out, int in, int seed) {
        w.add(module + ".weight", DType.BF16, new long[] {out, in},
                bf16(arena, (long) out * in, (float) (1.0 / Math.sqrt(in)), seed));
        w.add(module + ".bias", DType.BF16, new long[] {out}, bf16(arena, out, 0.01f, seed + 50));
    }

    /** Random MXFP4 codes, E8M0 scales around 2^-6 (weights up to ~0.1), bf16 biases. */
    private static void experts(SafetensorsWriter w, Arena arena, String name, int rows, int cols, int seed) {
        long blocks = (long) EXPERTS * rows * (cols / 32);
        MemorySegment codes = arena.allocate(16 * blocks, 64);
        fill(codes, seed, v -> v);
        MemorySegment scales = arena.allocate(blocks, 64);
        fill(scales, seed + 1, v -> {
            long out = 0;
            for (int b = 0; b < 8; b++) {
                out |= (120L + ((v >>> (8 * b)) & 3)) << (8 * b); // E8M0 120..123
            }
            return out;
        });
        w.add(name + "_blocks", DType.U8, new long[] {EXPERTS, rows, cols / 32, 16}, codes);
        w.add(name + "_scales", DType.U8, new long[] {EXPERTS, rows, cols / 32}, scales);
        w.add(name + "_bias", DType.BF16, new long[] {EXPERTS, rows}, bf16(arena, (long) EXPERTS * rows, 0.01f, seed + 2));
    }

    /** bf16 values uniform in [-amplitude, amplitude). */
    private static MemorySegment bf16(Arena arena, long n, float amplitude, int seed) {
        MemorySegment s = arena.allocate(2 * n + 8, 64);
        fill(s, seed, v -> {
            long out = 0;
            for (int k = 0; k < 4; k++) {
                float f = (((v >>> (16 * k)) & 0xffff) / 65536f - 0.5f) * 2 * amplitude;
                out |= ((long) (Float.floatToRawIntBits(f) >>> 16) & 0xffff) << (16 * k);
            }
            return out;
        });
        return s.asSlice(0, 2 * n);
    }

    /** Fills the segment (a whole number of longs, or its tail byte-wise) from a splitmix64 stream, in parallel. */
    private static void fill(MemorySegment s, int seed, java.util.function.LongUnaryOperator map) {
        long words = s.byteSize() / 8;
        long chunk = 1 << 17;
        int chunks = (int) Math.ceilDiv(words, chunk);
        IntStream.range(0, chunks).parallel().forEach(c -> {
            long x = seed * 0x9E3779B97F4A7C15L + c * 0xBF58476D1CE4E5B9L;
            long end = Math.min(words, (c + 1) * chunk);
            for (long i = c * chunk; i < end; i++) {
                x += 0x9E3779B97F4A7C15L;
                long z = x;
                z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
                z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
                z ^= z >>> 31;
                s.set(ValueLayout.JAVA_LONG_UNALIGNED, 8 * i, map.applyAsLong(z));
            }
        });
        for (long i = words * 8; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) map.applyAsLong((seed + i) * 0x9E3779B97F4A7C15L));
        }
    }
}
