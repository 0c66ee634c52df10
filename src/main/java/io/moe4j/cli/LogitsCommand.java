package io.moe4j.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code moe logits}: a whole model's logits at every position of a token sequence. */
@Command(name = "logits", mixinStandardHelpOptions = true,
        description = "Run a whole model over input_ids (I32 or I64 [T]) and write logits F32 [T, V] for every position.")
final class LogitsCommand implements Callable<Integer> {
    /** --model, --backend, --threads, --context, --activations: as moe generate, chat and serve take them. */
    @Mixin
    ModelArgs modelArgs;

    @Option(names = "--input", required = true, description = "safetensors file holding input_ids")
    Path input;

    @Option(names = "--output", required = true, description = "safetensors file to write (tensor 'logits')")
    Path output;

    @Option(names = "--incremental", description = "feed the tokens one at a time through the KV cache instead of as one prompt")
    boolean incremental;

    @Override
    public Integer call() {
        // logits are a measurement: auto's choice is said and kept, never changed after a failed load
        ModelBackend on = modelArgs.chosenBackend();
        LogitsJob.Result r = LogitsJob.run(modelArgs.model, input, output, modelArgs.options(on.backend()),
                incremental);
        System.err.printf("moe: %d positions (%s) on %s in %.2f s (%.1f tokens/s; load %.2f s) → %s%n",
                r.positions(), incremental ? "one at a time" : "one pass", on.described(), r.runSeconds(),
                r.positions() / r.runSeconds(), r.loadSeconds(), output);
        return 0;
    }
}
