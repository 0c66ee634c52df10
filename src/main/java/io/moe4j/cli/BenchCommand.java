package io.moe4j.cli;

import io.moe4j.MoeException;
import io.moe4j.backend.Backend;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.PlatformProbe;
import io.moe4j.backend.Support;
import io.moe4j.backend.oracle.BackendRegistry;
import io.moe4j.bench.BenchPreset;
import io.moe4j.bench.BenchResult;
import io.moe4j.bench.LayerBench;
import io.moe4j.bench.MemoryBandwidth;
import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.quant.ExpertWeights;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code moe bench}: one MoE layer of a real model's shape with random weights in a real scheme, timed on a backend,
 * against the machine's own memory read bandwidth. Decoding is bound by reading the routed experts' weights, so
 * the score is effective_gbps / machine_gbps.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Time an MoE layer (synthetic weights, real shapes and schemes) against memory bandwidth.")
final class BenchCommand implements Callable<Integer> {
    private static final long SEED = 20260421L;
    /** Show a progress bar when a step is expected to take longer than this. */
    private static final double BAR_SECONDS = 1.5;
    private static final double WARMUP_SECONDS = 2.0;

    @Option(names = "--preset", defaultValue = "gpt-oss-20b",
            description = "gpt-oss-20b, qwen3-30b-a3b or mixtral-8x7b (default: ${DEFAULT-VALUE})")
    String preset;

    @Option(names = "--scheme", description = "weight scheme, e.g. mxfp4, nvfp4, fp8-block, w4a16 (default: each "
            + "scheme of the preset)")
    String scheme;

    @Option(names = "--backend", defaultValue = "cpu", description = "cpu, cuda or emulation (default: ${DEFAULT-VALUE})")
    String backend;

    @Option(names = "--tokens", defaultValue = "1", split = ",",
            description = "batch sizes, comma separated, e.g. 1,16,256 (default: ${DEFAULT-VALUE})")
    int[] tokens;

    @Option(names = "--threads", description = "worker threads (default: all cores)")
    Integer threads;

    @Mixin
    ActivationsArg activations;

    @Option(names = "--intermediate", description = "the experts' intermediate size instead of the preset's: 960 "
            + "for gpt-oss-20b gives an expert's gate, up and down the bytes and multiply-adds of one 2880 x 2880 "
            + "matrix, the working set of ggml's MUL_MAT_ID test of that shape (256 for qwen3-30b-a3b, 768 x 2048)")
    Integer intermediate;

    @Option(names = "--fixed-routing", description = "route every call to the same experts (cache-hot) instead of "
            + "fresh random experts per call")
    boolean fixedRouting;

    @Option(names = "--json", description = "one JSON object per run on stdout instead of a table")
    boolean json;

    @Option(names = "--iterations", defaultValue = "20", description = "timed calls per run (default: ${DEFAULT-VALUE})")
    int iterations;

    /** 1 GiB: many times any last-level cache, so every pass reads DRAM. */
    @Option(names = "--bandwidth-mib", defaultValue = "1024", hidden = true,
            description = "buffer for the bandwidth measurement; far larger than the last-level cache")
    long bandwidthMib;

    @Option(names = "--model-preset", description = "time a whole model instead of one layer: gpt-oss-20b, "
            + "qwen3-30b-a3b, qwen3-235b-a22b, mixtral-8x7b or deepseek-v3 (real shape and scheme, synthetic weights, "
            + "batch-1 decode; batched with --batches)")
    String modelPreset;

    @Option(names = "--layers", description = "with --model-preset: layers to run (default: as many as fit "
            + "--memory-gib)")
    Integer layers;

    @Option(names = "--experts", description = "with --model-preset: routed experts a layer (default: the model's, "
            + "fewer only where one MoE layer does not fit --memory-gib)")
    Integer experts;

    @Option(names = "--decode-tokens", defaultValue = "16",
            description = "with --model-preset: timed decode steps, median reported (default: ${DEFAULT-VALUE})")
    int decodeTokens;

    @Option(names = "--batches", split = ",", description = "with --model-preset: also time batched decode at these"
            + " batch sizes, e.g. 8,64 (sequences stepped together as a server steps them; tokens/s over the batch)")
    List<Integer> batches;

    @Option(names = "--prompt-tokens", defaultValue = "128",
            description = "with --model-preset: the prefill prompt's length (default: ${DEFAULT-VALUE})")
    int promptTokens;

    @Option(names = "--memory-gib", description = "with --model-preset: memory the model as run may take (default:"
            + " 30%% of the machine's)")
    Double memoryGib;

    @Option(names = "--cache-dir", description = "with --model-preset: where synthetic models are written and reused"
            + " (default: the temp dir's moe4j-bench)")
    java.nio.file.Path cacheDir;

    @Option(names = "--write-only", description = "with --model-preset: write the synthetic model (or find it in "
            + "--cache-dir), print its directory and stop, timing nothing (for other programs to run the same weights)")
    boolean writeOnly;

    @Option(names = "--warmup", description = "untimed calls first (default: as many as fit in "
            + WARMUP_SECONDS + " s, at least 5, while the JIT compiles the kernels)")
    Integer warmup;

    /** The options only a whole-model run reads: without --model-preset they would be silently ignored. */
    private static final List<String> MODEL_PRESET_ONLY = List.of("--write-only", "--layers", "--experts",
            "--decode-tokens", "--prompt-tokens", "--memory-gib", "--cache-dir", "--batches");

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        if (modelPreset != null) {
            return modelBench();
        }
        ParseResult parsed = spec.commandLine().getParseResult();
        List<String> given = MODEL_PRESET_ONLY.stream().filter(parsed::hasMatchedOption).toList();
        if (!given.isEmpty()) {
            throw new IllegalArgumentException(String.join(", ", given) + (given.size() == 1 ? " applies" : " apply")
                    + " only with --model-preset (a whole model); without it moe bench times one layer");
        }
        BenchPreset p = BenchPreset.fromCliName(preset);
        List<SyntheticScheme> schemes = scheme == null ? p.schemes() : List.of(SyntheticScheme.fromCliName(scheme));
        int nThreads = threads == null ? Runtime.getRuntime().availableProcessors() : threads;
        if (nThreads < 1 || iterations < 1 || (warmup != null && warmup < 0)
                || Arrays.stream(tokens).anyMatch(t -> t < 1)) {
            throw new IllegalArgumentException("--threads, --iterations and --tokens must be positive, --warmup at least 0");
        }
        BackendRegistry registry = BackendRegistry.standard();
        Backend b = registry.find(backend)
                .orElseThrow(() -> new IllegalArgumentException("unknown backend '" + backend + "'; choose one of "
                        + String.join(", ", registry.names())))
                .backend();
        KernelActivations ka = activations.value();
        if (!b.computesWith(ka)) {
            throw new MoeException("backend " + b.name() + " multiplies activations in float only, not --activations "
                    + ka + " (" + String.join(", ", registry.computingWith(ka)) + " does)");
        }
        String label = ka == KernelActivations.FLOAT ? b.name() : b.name() + "/" + ka;

        double machine = roofline(b, nThreads, bandwidthMib);

        SyntheticWeights.Shape shape = p.shape();
        String name = p.cliName();
        if (intermediate != null) {
            if (intermediate < 1) {
                throw new IllegalArgumentException("--intermediate must be positive, got " + intermediate);
            }
            shape = new SyntheticWeights.Shape(shape.experts(), shape.hidden(), intermediate, shape.gateLayout(),
                    shape.activation(), shape.biases());
            name = p.cliName() + "/i" + intermediate;
        }
        List<BenchResult> results = new ArrayList<>();
        for (SyntheticScheme s : schemes) {
            try (Arena arena = Arena.ofShared()) {
                ExpertWeights w = generate(s, shape, arena);
                Support support = b.support(MoeProblem.of(w, p.topK()).withKernelActivations(ka), PlatformProbe.probe());
                if (!support.supported()) {
                    throw new MoeException("backend " + b.name() + " cannot run " + s.cliName() + ": " + support.reason());
                }
                System.err.printf("%s: %s%n", b.name(), support.reason());
                try (Experts experts = prepare(b, w, new ExecutionOptions(nThreads, ka))) {
                    LayerBench bench = new LayerBench(w, p.topK(), SEED);
                    for (int t : tokens) {
                        LayerBench.Timing timing = time(bench, experts, t, s);
                        BenchResult r = new BenchResult(name, s.cliName(), label, t, nThreads,
                                fixedRouting ? "fixed" : "random", timing.secondsPerCall() * 1e3,
                                t / timing.secondsPerCall(), timing.gflops(), timing.bytesPerCall(),
                                timing.effectiveGbps(), machine);
                        results.add(r);
                        if (json) {
                            System.out.println(r.json());
                            System.out.flush();
                        }
                    }
                }
            }
        }
        if (!json) {
            System.out.println(BenchResult.tableHeader());
            results.forEach(r -> System.out.println(r.tableRow()));
        }
        return 0;
    }

    private int modelBench() {
        io.moe4j.bench.model.ModelPreset p = io.moe4j.bench.model.ModelPreset.fromCliName(modelPreset);
        int nThreads = threads == null ? Runtime.getRuntime().availableProcessors() : threads;
        if (scheme != null || fixedRouting || intermediate != null || tokens.length != 1 || tokens[0] != 1) {
            throw new IllegalArgumentException("--model-preset times batch-1 decode in the preset's own scheme: "
                    + "--scheme, --fixed-routing, --intermediate and --tokens other than 1 do not apply");
        }
        if (!writeOnly && !backend.equals("cpu") && !backend.equals("emulation") && !backend.equals("cuda")) {
            throw new IllegalArgumentException("--model-preset runs on backend cpu, cuda or emulation, not '" + backend
                    + "'");
        }
        if (!writeOnly && activations.value() != KernelActivations.FLOAT) {
            // said before gigabytes of weights are written for a run the backend would refuse at load
            Backend b = BackendRegistry.standard().find(backend).orElseThrow().backend();
            if (!b.computesWith(activations.value())) {
                throw new IllegalArgumentException("backend " + backend + " multiplies activations in float only, "
                        + "not --activations " + activations.value());
            }
            if (!p.expertsKeepActivationsInFloat()) {
                throw new IllegalArgumentException("--activations " + activations.value() + " is for schemes that "
                        + "keep activations in float, and " + p.cliName() + "'s experts quantize them (" + p.scheme()
                        + ")");
            }
        }
        if (!writeOnly && backend.equals("cuda")) {
            // said before gigabytes of weights are written for a device that is not there
            io.moe4j.backend.cuda.driver.CudaProbe probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
            if (!probe.available()) {
                throw new IllegalArgumentException("--backend cuda: no usable CUDA device here (" + probe.reason()
                        + ")");
            }
        }
        if (nThreads < 1 || (layers != null && layers < 1) || (experts != null && experts < 1)
                || (memoryGib != null && !(memoryGib > 0))) {
            throw new IllegalArgumentException("--threads, --layers, --experts and --memory-gib must be positive");
        }
        int warm = warmup == null ? 4 : warmup;
        long budget = memoryGib == null ? io.moe4j.bench.model.MemoryFit.defaultBudget() : (long) (memoryGib * (1L << 30));
        java.nio.file.Path cache = cacheDir != null ? cacheDir
                : java.nio.file.Path.of(System.getProperty("java.io.tmpdir"), "moe4j-bench");
        if (layers != null && layers > p.shape().fullLayers() || experts != null && (experts > p.shape().fullExperts()
                || experts < p.shape().topK())) {
            throw new IllegalArgumentException(p.cliName() + " has " + p.shape().fullLayers() + " layers and "
                    + p.shape().fullExperts() + " experts a layer (top-" + p.shape().topK() + "): --layers " + layers
                    + ", --experts " + experts + " do not fit");
        }
        io.moe4j.bench.model.ModelShape shape = io.moe4j.bench.model.MemoryFit.fit(p.shape(), layers, experts, budget);
        ModelBenchRun run = new ModelBenchRun(p, shape, backend, nThreads,
                new io.moe4j.bench.model.ModelBench(warm, decodeTokens, promptTokens, SEED,
                        batches == null ? List.of() : batches), cache, budget,
                bandwidthMib << 20, json, activations.value());
        if (writeOnly) {
            System.out.println(run.write().toAbsolutePath());
            return 0;
        }
        return run.run();
    }

    /**
     * The bandwidth the weights' bytes are compared against: the host's memory read bandwidth for CPU backends,
     * the device's measured copy bandwidth (read + written) for cuda, the definitions of each.
     */
    private static double roofline(Backend b, int threads, long bandwidthMib) {
        if (b.name().equals("cuda")) {
            var probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
            if (!probe.available()) {
                throw new MoeException("backend cuda cannot run here: " + probe.reason());
            }
            System.err.println("measuring device copy bandwidth (cuMemcpyDtoD, 2 GiB) ...");
            double gbps = io.moe4j.backend.cuda.DeviceBandwidth.copyGbps();
            System.err.printf("device copy bandwidth: %.0f GB/s (read + written)%n", gbps);
            return gbps;
        }
        System.err.printf("measuring memory read bandwidth (%d threads, %d MiB) ...%n", threads, bandwidthMib);
        double machine = MemoryBandwidth.measure(threads, bandwidthMib << 20, MemoryBandwidth.BENCH_PASSES);
        System.err.printf("memory read bandwidth: %.1f GB/s%n", machine);
        return machine;
    }

    private static ExpertWeights generate(SyntheticScheme s, SyntheticWeights.Shape shape, Arena arena) {
        long bytes = (long) shape.experts() * (s.codes().rowBytes(shape.hidden()) * shape.w13Rows()
                + s.codes().rowBytes(shape.intermediate()) * shape.hidden());
        if (bytes < 256L << 20) {
            return SyntheticWeights.generate(s, shape, SEED, arena, n -> {
            });
        }
        try (ProgressBar pb = DemoCommand.bar("generating " + s.cliName() + " weights", bytes)) {
            return SyntheticWeights.generate(s, shape, SEED, arena, pb::stepBy);
        }
    }

    private static Experts prepare(Backend b, ExpertWeights w, ExecutionOptions options) {
        long t0 = System.nanoTime();
        System.err.printf("preparing %d experts on %s ...", w.numExperts(), b.name());
        Experts e = b.prepare(w, options);
        System.err.printf(" %.1f s%n", (System.nanoTime() - t0) / 1e9);
        return e;
    }

    /** Warms up, then times one configuration, with progress bars where a step takes a while. */
    private LayerBench.Timing time(LayerBench bench, Experts experts, int t, SyntheticScheme s) {
        String what = s.cliName() + ", " + t + (t == 1 ? " token" : " tokens");
        long t0 = System.nanoTime();
        bench.warmUp(experts, t, fixedRouting, 1, 0, n -> {
        });
        double first = (System.nanoTime() - t0) / 1e9;
        int minCalls = warmup == null ? 5 : warmup;
        double minSeconds = warmup == null ? WARMUP_SECONDS : 0;
        if (Math.max(minSeconds, first * minCalls) >= BAR_SECONDS) {
            long steps = warmup == null ? Math.max(minCalls, (long) (minSeconds / Math.max(first, 1e-6))) : minCalls;
            try (ProgressBar pb = DemoCommand.bar("warming up " + what, steps)) {
                bench.warmUp(experts, t, fixedRouting, minCalls, minSeconds, pb::stepBy);
            }
        } else {
            bench.warmUp(experts, t, fixedRouting, minCalls, minSeconds, n -> {
            });
        }
        if (first * iterations < BAR_SECONDS) {
            return bench.measure(experts, t, fixedRouting, iterations, n -> {
            });
        }
        try (ProgressBar pb = DemoCommand.bar("timing " + what, iterations)) {
            return bench.measure(experts, t, fixedRouting, iterations, pb::stepBy);
        }
    }
}
