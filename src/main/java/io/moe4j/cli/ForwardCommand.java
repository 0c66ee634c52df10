package io.moe4j.cli;

import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.layer.MoeOutput;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code moe forward}: one MoE layer on activations from a file. */
@Command(name = "forward", mixinStandardHelpOptions = true,
        description = "Run one MoE layer of a checkpoint on [T, H] activations; write output, topk_ids, topk_weights.")
final class ForwardCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "checkpoint directory (config.json + safetensors)")
    Path model;

    @Option(names = "--layer", description = "MoE layer index (default: the first MoE layer)")
    Integer layer;

    @Option(names = "--input", required = true, description = "safetensors file with the input activations")
    Path input;

    @Option(names = "--input-tensor", defaultValue = "hidden_states", description = "input tensor name (default: ${DEFAULT-VALUE})")
    String inputTensor;

    @Option(names = "--output", required = true, description = "safetensors file to write")
    Path output;

    @Option(names = "--backend", defaultValue = "auto", description = "auto, a moe4j backend, or a vLLM --moe-backend name (default: ${DEFAULT-VALUE})")
    String backend;

    @Option(names = "--threads", description = "CPU threads (default: all cores)")
    Integer threads;

    @Mixin
    ActivationsArg activations;

    @Override
    public Integer call() {
        MoeLayerOptions options = MoeLayerOptions.defaults().withBackend(backend)
                .withKernelActivations(activations.value());
        if (threads != null) {
            options = options.withThreads(threads);
        }
        int layerIndex = layer != null ? layer : firstMoeLayer();
        MoeOutput out = ForwardJob.run(model, layerIndex, input, inputTensor, output, options);
        System.err.printf("moe: layer %d, %d tokens → %s%n", layerIndex, out.tokens(), output);
        return 0;
    }

    private int firstMoeLayer() {
        var layers = io.moe4j.config.ModelConfig.load(model).moeLayers();
        if (layers.isEmpty()) {
            throw new io.moe4j.MoeException(model + ": the model has no MoE layers");
        }
        return layers.get(0);
    }
}
