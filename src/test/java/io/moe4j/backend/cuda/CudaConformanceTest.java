package io.moe4j.backend.cuda;

import static io.moe4j.testing.Norms.relL2;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.cli.ForwardJob;
import io.moe4j.conformance.ConformanceCases;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.safetensors.SafetensorsFile;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every conformance case through the code path of {@code moe forward} with {@code --backend cuda} (forced: a case
 * the backend cannot run fails with its reason rather than falling back): output within the case's
 * any_backend_rel_l2 of the transformers reference, topk_ids equal. Skipped where there is no usable GPU.
 */
class CudaConformanceTest {

    @BeforeEach
    void requireGpu() {
        CudaProbe probe = CudaRuntime.probe();
        assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    static Stream<String> cases() {
        return ConformanceCases.names().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void matchesTransformersReferenceOnTheGpu(String name, @TempDir Path tmp) {
        ConformanceCases.Case c = ConformanceCases.load(name);
        Path io = c.dir().resolve("io.safetensors");
        Path out = tmp.resolve("out.safetensors");
        ForwardJob.run(c.dir(), c.layer(), io, "hidden_states", out, MoeLayerOptions.defaults().withBackend("cuda"));

        try (SafetensorsFile expected = SafetensorsFile.open(io); SafetensorsFile actual = SafetensorsFile.open(out)) {
            assertThat(actual.tensor("topk_ids").toIntArray()).as("topk_ids of %s", name)
                    .containsExactly(expected.tensor("topk_ids").toIntArray());
            // the router runs on the device too (CudaRouter): its weights as the reference's
            assertThat(relL2(actual.tensor("topk_weights").toFloatArray(),
                    expected.tensor("topk_weights").toFloatArray())).as("topk_weights rel L2 of %s", name)
                    .isLessThan(1e-5);
            float[] want = expected.tensor("expected").toFloatArray();
            float[] got = actual.tensor("output").toFloatArray();
            double err = relL2(got, want);
            System.out.printf("conformance on cuda: %-42s rel L2 %.2e (tolerance %.0e)%n", name, err,
                    c.anyBackendTolerance());
            assertThat(got).doesNotContain(Float.NaN);
            assertThat(err).as("output rel L2 of %s on cuda", name).isLessThanOrEqualTo(c.anyBackendTolerance());
        }
    }
}
