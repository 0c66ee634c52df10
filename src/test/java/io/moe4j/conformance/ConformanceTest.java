package io.moe4j.conformance;

import io.moe4j.cli.ForwardJob;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.safetensors.SafetensorsFile;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every conformance case through the code path of {@code moe forward}, on every CPU-runnable backend: output
 * within the case's tolerance (emulation: emulation_rel_l2; others: any_backend_rel_l2) and topk_ids equal.
 */
class ConformanceTest {
    static final List<String> BACKENDS = List.of("emulation", "cpu");

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (String backend : BACKENDS) {
            for (String name : ConformanceCases.names()) {
                out.add(Arguments.of(backend, name));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("cases")
    void matchesTransformersReference(String backend, String name, @TempDir Path tmp) {
        ConformanceCases.Case c = ConformanceCases.load(name);
        Path io = c.dir().resolve("io.safetensors");
        Path out = tmp.resolve("out.safetensors");
        ForwardJob.run(c.dir(), c.layer(), io, "hidden_states", out,
                MoeLayerOptions.defaults().withBackend(backend).withThreads(2));

        try (SafetensorsFile expected = SafetensorsFile.open(io); SafetensorsFile actual = SafetensorsFile.open(out)) {
            int[] wantIds = expected.tensor("topk_ids").toIntArray();
            int[] gotIds = actual.tensor("topk_ids").toIntArray();
            assertThat(gotIds).as("topk_ids of %s", name).containsExactly(wantIds);

            float[] wantWeights = expected.tensor("topk_weights").toFloatArray();
            float[] gotWeights = actual.tensor("topk_weights").toFloatArray();
            assertThat(relL2(gotWeights, wantWeights)).as("topk_weights rel L2 of %s", name).isLessThan(1e-5);

            float[] want = expected.tensor("expected").toFloatArray();
            float[] got = actual.tensor("output").toFloatArray();
            double tolerance = backend.equals("emulation") ? c.emulationTolerance() : c.anyBackendTolerance();
            assertThat(relL2(got, want)).as("output rel L2 of %s on %s", name, backend).isLessThanOrEqualTo(tolerance);
        }
    }
}
