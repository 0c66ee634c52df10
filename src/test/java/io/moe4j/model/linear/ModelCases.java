package io.moe4j.model.linear;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.conformance.ConformanceCases;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The whole-model conformance fixtures (../shared/conformance-models, or a byte-identical copy under the test
 * resources): one small model per family and scheme, with its case.json.
 */
final class ModelCases {
    private ModelCases() {
    }

    static Path root() {
        String forced = System.getProperty("moe4j.conformance.models");
        List<Path> candidates = forced != null ? List.of(Path.of(forced))
                : List.of(Path.of("src/test/resources/conformance-models"),
                ConformanceCases.shared().resolve("conformance-models"));
        for (Path p : candidates) {
            if (Files.isRegularFile(p.resolve("README.md"))) {
                return p;
            }
        }
        throw new IllegalStateException("whole-model fixtures not found at " + candidates);
    }

    static List<String> names() {
        try (Stream<Path> s = Files.list(root())) {
            return s.filter(Files::isDirectory).map(d -> d.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Path dir(String name) {
        return root().resolve(name);
    }

    static JsonNode caseJson(String name) {
        try {
            return new ObjectMapper().readTree(dir(name).resolve("case.json").toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
