package io.moe4j.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The conformance fixtures: the project's byte-identical copy of ../shared/conformance (checked against its
 * SHA256SUMS by {@link FixtureIntegrityTest}), so a fresh clone tests itself.
 */
public final class ConformanceCases {
    private ConformanceCases() {
    }

    public static Path root() {
        String p = System.getProperty("moe4j.conformance", "src/test/resources/conformance");
        Path root = Path.of(p);
        if (!Files.isDirectory(root.resolve("cases"))) {
            throw new IllegalStateException("conformance fixtures not found at " + root.toAbsolutePath());
        }
        return root;
    }

    /** The shared folder beside the repository, if present (CI and developers have it). */
    public static Path shared() {
        String p = System.getProperty("moe4j.shared", "../shared");
        return Path.of(p);
    }

    public static List<String> names() {
        try (Stream<Path> s = Files.list(root().resolve("cases"))) {
            return s.filter(Files::isDirectory).map(d -> d.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static Path dir(String name) {
        return root().resolve("cases").resolve(name);
    }

    public record Case(String name, Path dir, String family, String scheme, int layer, int tokens, int topK,
                       double emulationTolerance, double anyBackendTolerance) {
    }

    public static Case load(String name) {
        Path dir = dir(name);
        try {
            JsonNode j = new ObjectMapper().readTree(dir.resolve("case.json").toFile());
            return new Case(name, dir, j.get("family").asText(), j.get("scheme").asText(), j.path("layer").asInt(0),
                    j.get("tokens").asInt(), j.get("top_k").asInt(),
                    j.get("tolerance").get("emulation_rel_l2").asDouble(),
                    j.get("tolerance").get("any_backend_rel_l2").asDouble());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
