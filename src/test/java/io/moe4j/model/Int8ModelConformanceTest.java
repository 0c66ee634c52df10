package io.moe4j.model;

import io.moe4j.MoeException;
import io.moe4j.backend.KernelActivations;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code --activations int8} on every whole-model conformance case on the cpu backend: the models whose experts it
 * runs give logits within the case's any_backend_rel_l2, as one prompt and one token at a time (the clear top-1
 * choices that moved are reported); the others are refused naming the option. Prints the measured errors (docs/cpu.md keeps them).
 */
class Int8ModelConformanceTest {

    /** The model cases with INT4, INT8 or FP4 experts and float activations (m_gptoss_mxfp4, m_qwen3_ct_w4a16_g128). */
    private static final int APPLICABLE = 2;

    @Test
    void logitsWithinToleranceOrRefusedByName() {
        List<String> rows = new ArrayList<>();
        int ran = 0;
        for (String name : ModelCases.names()) {
            ModelCases.Case c = ModelCases.load(name);
            ModelOptions options = ModelOptions.defaults().withBackend("cpu").withThreads(2)
                    .withKernelActivations(KernelActivations.INT8);
            Model model;
            try {
                model = Model.load(c.dir(), options);
            } catch (MoeException e) {
                assertThat(e.getMessage()).as("refusal of %s", name).contains("--activations int8");
                rows.add("| " + name + " | " + c.scheme() + " | refused | |");
                continue;
            }
            double prompt;
            double incremental;
            String flips;
            try (model; Session s = model.newSession(); Session s2 = model.newSession()) {
                float[] got = s.prefill(c.inputIds());
                prompt = relL2(got, c.logits());
                flips = top1Flips(c, got);
                incremental = relL2(ConformanceModelsTest.oneAtATime(s2, c.inputIds(), c.vocab()), c.logits());
            }
            rows.add(String.format(Locale.ROOT, "| %s | %s | %.2e / %.2e | %.2g | %s |", name, c.scheme(), prompt,
                    incremental, c.anyBackendTolerance(), flips));
            assertThat(prompt).as("int8 logits rel L2 of %s as one prompt", name)
                    .isLessThanOrEqualTo(c.anyBackendTolerance());
            assertThat(incremental).as("int8 logits rel L2 of %s one token at a time", name)
                    .isLessThanOrEqualTo(c.anyBackendTolerance());
            ran++;
        }
        System.out.println("| model case | scheme | int8 logits rel L2 (prompt / one at a time) | any_backend_rel_l2 "
                + "| clear top-1 positions whose argmax moved |");
        System.out.println("|---|---|---|---|---|");
        rows.forEach(System.out::println);
        assertThat(ran).as("model cases run with int8 activations").isGreaterThanOrEqualTo(APPLICABLE);
    }

    /**
     * The positions whose expected top-1 leads by more than the case's top1_min_margin and whose argmax moved, with
     * the expected lead. Reported, not asserted: the float backends keep every one, while rounding activations to
     * int8 moves logits by about 1% (rel L2), more than some leads of 0.01-0.1 (see docs/cpu.md).
     */
    private static String top1Flips(ModelCases.Case c, float[] got) {
        int v = c.vocab();
        float[] want = c.logits();
        List<String> moved = new ArrayList<>();
        int clear = 0;
        for (int t = 0; t < want.length / v; t++) {
            float[] row = java.util.Arrays.copyOfRange(want, t * v, (t + 1) * v);
            int best = ConformanceModelsTest.argmax(row);
            float lead = row[best];
            row[best] = Float.NEGATIVE_INFINITY;
            lead -= row[ConformanceModelsTest.argmax(row)];
            if (lead > c.top1MinMargin()) {
                clear++;
                if (ConformanceModelsTest.argmax(java.util.Arrays.copyOfRange(got, t * v, (t + 1) * v)) != best) {
                    moved.add(String.format(Locale.ROOT, "%d (lead %.3f)", t, lead));
                }
            }
        }
        return moved.size() + " of " + clear + (moved.isEmpty() ? "" : ": " + String.join(", ", moved));
    }

    @Test
    void otherBackendsRefuseIt() {
        assertThatThrownBy(() -> ModelOptions.defaults().withBackend("emulation")
                .withKernelActivations(KernelActivations.INT8))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--activations int8");
    }
}
