package io.moe4j.backend.cpu;

import io.moe4j.cli.ForwardJob;
import io.moe4j.conformance.ConformanceCases;
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
 * Every conformance case through {@code moe forward} on the cpu backend, with each kernel set: the output within
 * the tolerance the case sets for the exact reference itself (emulation_rel_l2), tighter than the one for optimized
 * backends.
 */
class CpuConformanceTest {

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (String kernels : KernelsUnderTest.names()) {
            for (String name : ConformanceCases.names()) {
                out.add(Arguments.of(kernels, name));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("cases")
    void matchesTransformersReference(String kernels, String name, @TempDir Path tmp) {
        ConformanceCases.Case c = ConformanceCases.load(name);
        Path io = c.dir().resolve("io.safetensors");
        Path out = tmp.resolve("out.safetensors");
        String before = System.getProperty(KernelSelection.PROPERTY);
        System.setProperty(KernelSelection.PROPERTY, Boolean.toString(kernels.equals("scalar")));
        try {
            ForwardJob.run(c.dir(), c.layer(), io, "hidden_states", out,
                    MoeLayerOptions.defaults().withBackend(CpuBackend.NAME).withThreads(2));
        } finally {
            if (before == null) {
                System.clearProperty(KernelSelection.PROPERTY);
            } else {
                System.setProperty(KernelSelection.PROPERTY, before);
            }
        }
        try (SafetensorsFile expected = SafetensorsFile.open(io); SafetensorsFile actual = SafetensorsFile.open(out)) {
            float[] want = expected.tensor("expected").toFloatArray();
            float[] got = actual.tensor("output").toFloatArray();
            assertThat(relL2(got, want)).as("output rel L2 of %s on cpu/%s", name, kernels)
                    .isLessThanOrEqualTo(c.emulationTolerance());
        }
    }
}
