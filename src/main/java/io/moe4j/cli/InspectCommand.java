package io.moe4j.cli;

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
        return 0;
    }
}
