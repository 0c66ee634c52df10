package io.moe4j.cli;

import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.TensorInfo;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code moe inspect}: what a checkpoint holds. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "List the tensors of a checkpoint (a directory or one .safetensors file).")
final class InspectCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "checkpoint directory or .safetensors file")
    Path model;

    @Override
    public Integer call() {
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            long total = 0;
            System.out.printf("%-72s %-8s %-20s %12s%n", "tensor", "dtype", "shape", "bytes");
            for (TensorInfo t : ckpt.infos()) {
                System.out.printf("%-72s %-8s %-20s %12d%n", t.name(), t.dtype(), t.shapeString(), t.byteSize());
                total += t.byteSize();
            }
            System.out.printf("%d tensors, %d bytes%n", ckpt.names().size(), total);
        }
        Path dir = java.nio.file.Files.isDirectory(model) ? model : model.toAbsolutePath().getParent();
        if (dir != null && java.nio.file.Files.isRegularFile(dir.resolve("config.json"))) {
            printMoeLayers(ModelConfig.load(dir));
        }
        return 0;
    }

    private static void printMoeLayers(ModelConfig config) {
        QuantizationConfig quant = QuantizationConfig.of(config);
        System.out.printf("%nmodel_type %s: %d layers, MoE layers %s%n", config.family().modelType(), config.numLayers(),
                config.moeLayers());
        for (int layer : config.moeLayers()) {
            MoeLayerConfig l = config.layer(layer);
            System.out.printf("layer %d: %d experts, top-%d, H %d, I %d, router %s, activation %s%s%n", layer,
                    l.numExperts(), l.topK(), l.hidden(), l.intermediate(), l.router().kind(), l.activation(),
                    l.shared() == null ? "" : ", shared expert I " + l.shared().intermediate());
            System.out.printf("  scheme: %s%n", quant.methodFor(l).scheme());
        }
    }
}
