package io.moe4j.quant;

import io.moe4j.config.ModelConfig;
import io.moe4j.conformance.ConformanceCases;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.safetensors.Checkpoint;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** The conformance cases (the project's checked copy of ../shared/conformance). */
public final class Cases {
    private Cases() {
    }

    public static Path dir(String name) {
        return ConformanceCases.dir(name);
    }

    public static List<String> all() {
        return ConformanceCases.names();
    }

    /** One case opened: its config, layer 0, checkpoint and the method its quantization config selects. */
    public record Opened(String name, ModelConfig model, MoeLayerConfig layer, Checkpoint checkpoint)
            implements AutoCloseable {
        /** The method the case's quantization config selects for layer 0 (built on each call). */
        public QuantMethod method() {
            return QuantizationConfig.of(model).methodFor(layer);
        }

        public ExpertWeights load(Arena arena) {
            return method().load(checkpoint, layer, LoadOptions.ALL, arena);
        }

        public ExpertWeights load(Arena arena, int... localExperts) {
            return method().load(checkpoint, layer, new LoadOptions(localExperts, b -> {
            }), arena);
        }

        @Override
        public void close() {
            checkpoint.close();
        }
    }

    public static Opened open(String name) {
        Path d = dir(name);
        ModelConfig model = ModelConfig.load(d);
        MoeLayerConfig layer = model.layer(model.moeLayers().get(0));
        return new Opened(name, model, layer, Checkpoint.open(d));
    }
}
