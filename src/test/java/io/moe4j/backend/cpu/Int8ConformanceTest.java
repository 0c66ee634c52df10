package io.moe4j.backend.cpu;

import io.moe4j.MoeException;
import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.PlatformProbe;
import io.moe4j.cli.ForwardJob;
import io.moe4j.conformance.ConformanceCases;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.safetensors.SafetensorsFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code --activations int8} on every conformance case through {@code moe forward} on the cpu backend: each case it
 * runs stays within the case's tolerance for optimized backends (any_backend_rel_l2), and each case it cannot run is
 * refused with a reason naming the option. Prints the measured error of every case (docs/cpu.md keeps the table).
 */
class Int8ConformanceTest {

    /**
     * The conformance cases whose experts are INT4, INT8 or FP4 with float activations (by their case.json schemes:
     * gptoss_mxfp4, mixtral_ct_nvfp4a16, mixtral_ct_w8a16_channel, qwen3_ct_w4a16_g128, qwen3_quark_w_mxfp4): the
     * fewest the mode must run, so that a mode refusing everything cannot pass.
     */
    private static final int APPLICABLE = 5;

    @Test
    void everyCaseRunsWithinToleranceOrIsRefusedByName(@TempDir Path tmp) {
        assumeTrue(KernelSelection.vectorUnavailable(PlatformProbe.probeReal().vectorBitSize()).isEmpty()
                && !KernelSelection.scalarForced(), "Vector API kernels unavailable");
        List<String> rows = new ArrayList<>();
        int ran = 0;
        for (String name : ConformanceCases.names()) {
            ConformanceCases.Case c = ConformanceCases.load(name);
            Path io = c.dir().resolve("io.safetensors");
            Path out = tmp.resolve(name + ".safetensors");
            MoeLayerOptions options = MoeLayerOptions.defaults().withBackend(CpuBackend.NAME).withThreads(2)
                    .withKernelActivations(KernelActivations.INT8);
            try {
                ForwardJob.run(c.dir(), c.layer(), io, "hidden_states", out, options);
            } catch (MoeException e) {
                assertThat(e.getMessage()).as("refusal of %s", name).contains("--activations int8");
                rows.add(String.format(Locale.ROOT, "| %s | %s | refused | | %s |", name, c.scheme(), reasonTail(e)));
                continue;
            }
            double err;
            double exact;
            try (SafetensorsFile expected = SafetensorsFile.open(io); SafetensorsFile actual = SafetensorsFile.open(out)) {
                float[] want = expected.tensor("expected").toFloatArray();
                err = relL2(actual.tensor("output").toFloatArray(), want);
                ForwardJob.run(c.dir(), c.layer(), io, "hidden_states", out,
                        options.withKernelActivations(KernelActivations.FLOAT));
                try (SafetensorsFile floats = SafetensorsFile.open(out)) {
                    exact = relL2(floats.tensor("output").toFloatArray(), want);
                }
            }
            rows.add(String.format(Locale.ROOT, "| %s | %s | %.2e | %.2e | %.2g |", name, c.scheme(), err, exact,
                    c.anyBackendTolerance()));
            assertThat(err).as("int8-activation rel L2 of %s", name).isLessThanOrEqualTo(c.anyBackendTolerance());
            // int8 rounding must show: equal errors would mean the option was lost on the way to the kernels
            assertThat(err).as("int8 error of %s above the float path's", name).isGreaterThan(exact);
            ran++;
        }
        System.out.println("| case | scheme | int8 rel L2 | float rel L2 | any_backend_rel_l2 |");
        System.out.println("|---|---|---|---|---|");
        rows.forEach(System.out::println);
        assertThat(ran).as("cases run with int8 activations").isGreaterThanOrEqualTo(APPLICABLE);
    }

    private static String reasonTail(MoeException e) {
        String m = e.getMessage();
        int at = m.indexOf("--activations int8");
        String r = m.substring(at);
        int end = r.indexOf(';');
        return end < 0 ? r : r.substring(0, end);
    }
}
