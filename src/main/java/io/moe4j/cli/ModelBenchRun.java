package io.moe4j.cli;

import io.moe4j.bench.MemoryBandwidth;
import io.moe4j.bench.model.ModelBench;
import io.moe4j.bench.model.ModelBenchResult;
import io.moe4j.bench.model.ModelPreset;
import io.moe4j.bench.model.ModelShape;
import io.moe4j.bench.model.SyntheticModel;
import io.moe4j.bench.model.TokenBytes;
import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import me.tongfei.progressbar.ProgressBar;

import java.nio.file.Path;
import java.util.Locale;

/**
 * {@code moe bench --model-preset P}: writes (or reuses) a synthetic model of the preset's real shape and scheme,
 * loads it through {@link Model#load}, times batch-1 decode, a prompt's prefill and any batched decode asked for, and
 * sets the bytes a token reads against the read bandwidth measured in the same run.
 *
 * @param shape the preset's shape as run (fewer layers or experts where the whole model does not fit)
 * @param budget the memory budget the shape was fitted to, for the message
 * @param activations the precision the experts' kernels multiply activations in
 */
record ModelBenchRun(ModelPreset preset, ModelShape shape, String backend, int threads, ModelBench bench,
                     Path cacheDir, long budget, long bandwidthBytes, boolean json,
                     io.moe4j.backend.KernelActivations activations) {
    private static final long SEED = 20261125L;

    /** A run whose experts multiply activations in float. */
    ModelBenchRun(ModelPreset preset, ModelShape shape, String backend, int threads, ModelBench bench, Path cacheDir,
                  long budget, long bandwidthBytes, boolean json) {
        this(preset, shape, backend, threads, bench, cacheDir, budget, bandwidthBytes, json,
                io.moe4j.backend.KernelActivations.FLOAT);
    }

    int run() {
        return measure(write());
    }

    /** Writes the synthetic model (or finds it written before) and returns its directory; times nothing. */
    Path write() {
        Path dir = cacheDir.resolve(String.format(Locale.ROOT, "%s-%dL-%dE", preset.cliName(), shape.layers(),
                shape.experts()));
        long bytes = SyntheticModel.checkpointBytes(shape);
        if (shape.layers() < shape.fullLayers() || shape.experts() < shape.fullExperts()) {
            System.err.printf(Locale.ROOT, "%s: the whole model is %.1f GB; running %d of %d layers, %d of %d experts"
                            + " a layer (%.1f GB; budget %.1f GB, --layers / --experts / --memory-gib to change)%n",
                    preset.cliName(), SyntheticModel.checkpointBytes(shape.full()) / 1e9, shape.layers(),
                    shape.fullLayers(), shape.experts(), shape.fullExperts(), bytes / 1e9, budget / 1e9);
        }
        denseOnly(preset, shape).ifPresent(System.err::println);
        if (SyntheticModel.isWritten(dir, shape)) {
            System.err.println("reusing " + dir);
        } else {
            try (ProgressBar pb = Progress.builder("writing " + dir.getFileName(), 500).setInitialMax(bytes)
                    .setUnit(" MB", 1_000_000).build()) {
                SyntheticModel.writeIfAbsent(dir, shape, SEED, pb::stepBy);
            }
        }
        return dir;
    }

    /** A warning where the layers run are all of a model's dense first layers: no expert would be timed. */
    static java.util.Optional<String> denseOnly(ModelPreset preset, ModelShape shape) {
        if (shape.layers() > shape.firstDense() || shape.firstDense() >= shape.fullLayers()) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(String.format(Locale.ROOT, "%s: its first %d layers are dense "
                + "(first_k_dense_replace), so the %d run here have no experts; --layers %d or more runs an MoE layer",
                preset.cliName(), shape.firstDense(), shape.layers(), shape.firstDense() + 1));
    }

    private int measure(Path dir) {
        double machine;
        if (backend.equals(ModelOptions.CUDA)) {
            // the model is read on the GPU: its roofline is the device's copy bandwidth (bytes read plus written)
            System.err.println("measuring the device's copy bandwidth ...");
            machine = io.moe4j.backend.cuda.DeviceBandwidth.copyGbps();
            System.err.printf(Locale.ROOT, "device copy bandwidth: %.1f GB/s%n", machine);
        } else {
            System.err.printf(Locale.ROOT, "measuring memory read bandwidth (%d threads, %d MiB) ...%n", threads,
                    bandwidthBytes >> 20);
            machine = MemoryBandwidth.measure(threads, bandwidthBytes, MemoryBandwidth.BENCH_PASSES);
            System.err.printf(Locale.ROOT, "memory read bandwidth: %.1f GB/s%n", machine);
        }

        long t0 = System.nanoTime();
        ModelOptions options = ModelOptions.defaults().withBackend(backend).withThreads(threads)
                .withKernelActivations(activations);
        ModelBench.Timing timing;
        try (Model model = Model.load(dir, options)) {
            System.err.printf(Locale.ROOT, "loaded in %.1f s%n", (System.nanoTime() - t0) / 1e9);
            String what = "decoding, then a " + bench.promptTokens() + "-token prefill"
                    + (bench.batches().isEmpty() ? "" : ", then batches of " + bench.batches().stream()
                    .map(String::valueOf).collect(java.util.stream.Collectors.joining(", ")));
            try (ProgressBar pb = DemoCommand.bar(what, bench.steps())) {
                timing = bench.run(model, pb::stepBy);
            }
        }
        TokenBytes tb = TokenBytes.of(shape);
        double perToken = timing.medianDecodeSeconds();
        double effective = tb.total() / perToken / 1e9;
        long full = TokenBytes.of(shape.full()).total();
        ModelBenchResult r = new ModelBenchResult(preset.cliName(), preset.scheme(), backend, threads, shape.layers(),
                shape.fullLayers(), shape.experts(), shape.fullExperts(), bench.decodeTokens(), perToken * 1e3,
                timing.decodeTokensPerS(), timing.promptTokens(), timing.prefillTokensPerS(),
                timing.firstPrefillTokensPerS(), tb, effective, machine,
                full, effective * 1e9 / full, timing.decodeCpuSeconds() / (timing.decodeWallSeconds() * threads),
                timing.batches());
        System.out.print(json ? r.json() + System.lineSeparator() : r.text());
        System.out.flush();
        return 0;
    }
}
