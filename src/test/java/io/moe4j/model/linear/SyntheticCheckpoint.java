package io.moe4j.model.linear;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.config.ModelConfig;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.safetensors.SafetensorsWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A one-file checkpoint written by a test, with a qwen3_moe config carrying the given quantization_config. */
final class SyntheticCheckpoint {
    private SyntheticCheckpoint() {
    }

    static QuantizationConfig write(Path dir, String quantizationConfigJson, SafetensorsWriter tensors) {
        try {
            String config = "{\"model_type\": \"qwen3_moe\", \"torch_dtype\": \"bfloat16\""
                    + (quantizationConfigJson == null ? "" : ", \"quantization_config\": " + quantizationConfigJson) + "}";
            Files.writeString(dir.resolve("config.json"), config);
            tensors.write(dir.resolve("model.safetensors"));
            JsonNode root = new ObjectMapper().readTree(config);
            return QuantizationConfig.of(ModelConfig.parse(dir.resolve("config.json"), root));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
