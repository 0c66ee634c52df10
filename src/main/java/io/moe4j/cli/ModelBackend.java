package io.moe4j.cli;

import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.Platform;
import io.moe4j.model.ModelOptions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Where a whole model runs when the command line says {@code --backend auto} (the default): on the GPU where this
 * machine has a usable CUDA device that can hold the checkpoint, else on the CPU, with the reason, which the loaded
 * line shows. A named backend is taken as named.
 *
 * @param backend  the backend to load on
 * @param reason   why, for auto (null when the backend was named)
 * @param fallback whether a failed device load may go on to the cpu (auto only: a named backend never falls back)
 */
record ModelBackend(String backend, String reason, boolean fallback) {
    static final String AUTO = "auto";
    /** Device memory kept free beside the weights (KV cache, activations, the CUDA context). */
    private static final double WEIGHTS_SHARE = 0.9;

    static ModelBackend choose(String asked, Path model, int gpus, KernelActivations activations, Platform platform) {
        if (!AUTO.equals(asked)) {
            return new ModelBackend(asked, null, false);
        }
        if (gpus > 1) {
            if (!platform.cuda().available()) {
                throw new IllegalArgumentException("--gpus " + gpus + " spreads experts over CUDA GPUs, and this "
                        + "machine has none usable: " + platform.cuda().reason());
            }
            return new ModelBackend(ModelOptions.CUDA, "--gpus " + gpus, false);
        }
        if (activations != KernelActivations.FLOAT) {
            return new ModelBackend("cpu", "--activations " + activations + " runs on the cpu kernels", false);
        }
        Platform.CudaInfo cuda = platform.cuda();
        if (!cuda.available()) {
            return new ModelBackend("cpu", cuda.reason(), false);
        }
        long weights = checkpointBytes(model);
        if (cuda.memoryBytes() > 0 && weights > WEIGHTS_SHARE * cuda.memoryBytes()) {
            return new ModelBackend("cpu", String.format("the checkpoint's %.1f GB do not fit the %s's %.1f GB",
                    weights / 1e9, cuda.deviceName(), cuda.memoryBytes() / 1e9), false);
        }
        return new ModelBackend(ModelOptions.CUDA, cuda.deviceName(), true);
    }

    /** The safetensors bytes in the model directory (0 where it holds none: loading says what is missing). */
    static long checkpointBytes(Path model) {
        if (!Files.isDirectory(model)) {
            return 0;
        }
        try (Stream<Path> files = Files.list(model)) {
            return files.filter(f -> f.getFileName().toString().endsWith(".safetensors")).mapToLong(f -> {
                try {
                    return Files.size(f);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }).sum();
        } catch (IOException | UncheckedIOException e) {
            return 0;
        }
    }

    /** "cpu", or "cpu (auto: why)". */
    String described() {
        return reason == null ? backend : backend + " (auto: " + reason + ")";
    }
}
