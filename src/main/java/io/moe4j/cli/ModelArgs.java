package io.moe4j.cli;

import io.moe4j.backend.PlatformProbe;
import io.moe4j.generate.MoeModel;
import io.moe4j.model.ModelOptions;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/**
 * The options every whole-model command shares: which model, where it runs, how much context it may hold, the
 * precision its experts multiply activations in.
 */
final class ModelArgs {
    @Option(names = "--model", required = true,
            description = "model directory (config.json, safetensors, tokenizer.json ...); moe serve also takes 'toy', a tiny built-in test model")
    Path model;

    @Option(names = "--backend", defaultValue = ModelBackend.AUTO,
            description = "auto (cuda where a CUDA GPU can hold the checkpoint, else cpu), emulation, cpu, or cuda "
                    + "(the whole decoder on the GPU) (default: ${DEFAULT-VALUE})")
    String backend;

    @Option(names = "--threads", description = "CPU threads (default: all cores)")
    Integer threads;

    @Option(names = "--context", defaultValue = "0",
            description = "most positions a sequence may hold (default: the model's max_position_embeddings)")
    int context;

    @Option(names = "--gpus", defaultValue = "1",
            description = "with --backend cuda: spread each MoE layer's routed experts over this many GPUs (devices "
                    + "0..N-1, exchanging rows through NCCL); each sequence's attention and KV cache live on one of "
                    + "them (default: ${DEFAULT-VALUE})")
    int gpus;

    @Mixin
    ActivationsArg activations;

    @Option(names = "--no-warmup",
            description = "chat and serve: skip the short throwaway prompt run after loading that compiles the "
                    + "kernels before the first request (loading takes a few seconds longer, the first reply that "
                    + "much less)")
    boolean noWarmup;

    /** The options for {@code backend}, a resolved backend name (not auto). */
    ModelOptions options(String backend) {
        // named as the user wrote them (ModelOptions' own checks speak of its fields)
        if (context < 0) {
            throw new IllegalArgumentException("--context must be 0 (the model's) or positive, got " + context);
        }
        if (threads != null && threads <= 0) {
            throw new IllegalArgumentException("--threads must be positive, got " + threads);
        }
        if (gpus <= 0) {
            throw new IllegalArgumentException("--gpus must be positive, got " + gpus);
        }
        ModelOptions o = ModelOptions.defaults().withBackend(backend).withContextLimit(context)
                .withKernelActivations(activations.value()).withGpus(gpus);
        return threads == null ? o : o.withThreads(threads);
    }

    /** The machine auto chooses for; null: this one (tests pose as another). */
    io.moe4j.backend.Platform platform;

    /** Where the model runs: {@code --backend} as given, or auto's choice for this machine and checkpoint. */
    ModelBackend chosenBackend() {
        return ModelBackend.choose(backend, model, gpus, activations.value(),
                platform != null ? platform : PlatformProbe.probeReal());
    }

    MoeModel load() {
        long start = System.nanoTime();
        ModelBackend chosen = chosenBackend();
        MoeModel m;
        try {
            m = load(chosen.backend());
        } catch (RuntimeException e) {
            if (!chosen.fallback()) {
                throw e;
            }
            // auto picked the GPU and it cannot take this model: said, then the cpu, which runs every model
            System.err.println("moe: cuda cannot run " + model.getFileName() + " (" + e.getMessage()
                    + "); loading on cpu (--backend cuda makes this an error)");
            chosen = new ModelBackend("cpu", "cuda could not load it", false);
            m = load(chosen.backend());
        }
        System.err.printf("moe: loaded %s (%s, %d layers) on %s in %.1f s%n", model.getFileName(),
                m.model().config().family().modelType(), m.model().config().layers().size(),
                gpus > 1 ? chosen.backend() + " x " + gpus + " GPUs" : chosen.described(),
                (System.nanoTime() - start) / 1e9);
        if (context > m.model().contextLimit()) {
            // the model's positions bound the context: said, so that nobody counts on the longer one
            System.err.printf("moe: --context %d is more than the model's max_position_embeddings; the context holds "
                    + "%d positions%n", context, m.model().contextLimit());
        }
        return m;
    }

    private MoeModel load(String on) {
        try (LayerBar bar = new LayerBar("loading " + model.getFileName())) {
            return MoeModel.load(model, options(on).withLoadListener(bar));
        }
    }

    /** {@link #load}, then the model's warm-up ({@link io.moe4j.model.Model#warmUp}) unless --no-warmup. */
    MoeModel loadWarmedUp() {
        MoeModel m = load();
        if (!noWarmup) {
            try {
                System.err.printf("moe: warmed up in %.1f s%n", m.model().warmUp());
            } catch (RuntimeException e) {
                m.close();
                throw e;
            }
        }
        return m;
    }

    /**
     * A progress bar of the layers loaded, on a terminal only (a log gets the one line after loading): it starts
     * with the first layer, when the model's count is known.
     */
    private static final class LayerBar implements io.moe4j.model.LoadListener, AutoCloseable {
        private final String task;
        private final boolean shown = Progress.onTerminal();
        private me.tongfei.progressbar.ProgressBar bar;

        LayerBar(String task) {
            this.task = task;
        }

        @Override
        public void layerLoaded(int done, int of) {
            if (!shown) {
                return;
            }
            if (bar == null) {
                bar = DemoCommand.bar(task, of);
            }
            bar.stepTo(done);
        }

        @Override
        public void close() {
            if (bar != null) {
                bar.close();
            }
        }
    }
}
