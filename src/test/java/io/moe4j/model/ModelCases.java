package io.moe4j.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.safetensors.SafetensorsFile;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/** The whole-model fixtures of ../shared/conformance-models (made with transformers; read only). */
final class ModelCases {
    private ModelCases() {
    }

    static Path root() {
        return Path.of(System.getProperty("moe4j.shared", "../shared")).resolve("conformance-models");
    }

    static List<String> names() {
        Path root = root();
        if (!Files.isDirectory(root)) {
            throw new IllegalStateException("whole-model fixtures not found at " + root.toAbsolutePath());
        }
        try (Stream<Path> s = Files.list(root)) {
            return s.filter(Files::isDirectory).map(d -> d.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * One case.
     *
     * @param quantizedLinears how many dense linears (attention, dense MLP) the checkpoint stores quantized
     */
    record Case(String name, Path dir, String family, String scheme, int quantizedLinears, double emulationTolerance,
                double anyBackendTolerance, double top1MinMargin, int[] inputIds, float[] logits, int vocab) {

        double tolerance(String backend) {
            return backend.equals("emulation") ? emulationTolerance : anyBackendTolerance;
        }
    }

    static Case load(String name) {
        Path dir = root().resolve(name);
        try (SafetensorsFile io = SafetensorsFile.open(dir.resolve("io.safetensors"))) {
            JsonNode j = new ObjectMapper().readTree(dir.resolve("case.json").toFile());
            JsonNode tol = j.get("tolerance");
            return new Case(name, dir, j.get("family").asText(), j.get("scheme").asText(),
                    j.path("quantized_dense_linears").asInt(0), tol.get("emulation_rel_l2").asDouble(),
                    tol.get("any_backend_rel_l2").asDouble(), tol.get("top1_min_margin").asDouble(),
                    io.tensor("input_ids").toIntArray(), io.tensor("logits").toFloatArray(),
                    j.get("vocab_size").asInt());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
