package io.moe4j.cli;

import io.moe4j.backend.KernelActivations;
import picocli.CommandLine.Option;

/**
 * {@code --activations}, declared once for every command that runs MoE experts ({@code moe bench}, {@code moe
 * forward} and, through {@link ModelArgs}, the whole-model commands), so its help and its parsing are the same
 * everywhere. Whether a backend can compute with the value is the backend's rule ({@code Backend.computesWith}),
 * checked where the backend is chosen.
 */
final class ActivationsArg {
    @Option(names = "--activations", defaultValue = "float",
            description = "precision the MoE experts' kernels multiply activations in: float (exact) or int8 (blocks of "
                    + "32 with one scale each, integer dot products; cpu backend, INT4/INT8/FP4 weight-only experts) "
                    + "(default: ${DEFAULT-VALUE})")
    String activations;

    /** The value given, or a clear error naming the option. */
    KernelActivations value() {
        return KernelActivations.parse(activations, "--activations");
    }
}
