package io.moe4j.model;

import io.moe4j.MoeException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every whole-model case of ../shared/conformance-models on every CPU backend, as one prompt and one token at a time
 * through the KV cache: logits within the case's rel L2 tolerance, and the argmax equal wherever the expected top-1
 * leads the runner-up by more than top1_min_margin.
 */
class ConformanceModelsTest {
    static final List<String> BACKENDS = List.of("emulation", "cpu", "cuda");

    static Stream<Arguments> runs() {
        List<Arguments> out = new ArrayList<>();
        for (String name : ModelCases.names()) {
            for (String backend : BACKENDS) {
                for (boolean incremental : new boolean[] {false, true}) {
                    out.add(Arguments.of(name, backend, incremental));
                }
            }
        }
        return out.stream();
    }

    static Stream<String> quantizedCases() {
        return ModelCases.names().stream().filter(n -> ModelCases.load(n).quantizedLinears() > 0);
    }

    @ParameterizedTest(name = "{0} on {1}, incremental={2}")
    @MethodSource("runs")
    void logitsMatchTransformers(String name, String backend, boolean incremental) {
        ModelCases.Case c = ModelCases.load(name);
        ModelOptions options = ModelOptions.defaults().withBackend(backend).withThreads(2);
        if (backend.equals(ModelOptions.CUDA)) {
            assumeGpu();
        }
        try (Model model = Model.load(c.dir(), options); Session session = model.newSession()) {
            float[] got = incremental ? oneAtATime(session, c.inputIds(), c.vocab()) : session.prefill(c.inputIds());
            double tolerance = c.tolerance(backend);
            assertThat(relL2(got, c.logits())).as("logits rel L2 of %s on %s", name, backend)
                    .isLessThanOrEqualTo(tolerance);
            assertClearTop1Agrees(c, got);
            assertThat(session.position()).isEqualTo(c.inputIds().length);
        }
    }

    /** The cases whose quantized linears {@link ReferenceLinears} dequantizes (their experts run through MoeLayer). */
    static final List<String> REFERENCE_LINEAR_CASES = List.of(
            "m_mixtral_ct_fp8_tensor", "m_deepseek_ct_fp8_block", "m_qwen3_ct_w4a16_g128");

    static Stream<Arguments> referenceLinearRuns() {
        return runs().filter(a -> REFERENCE_LINEAR_CASES.contains((String) a.get()[0])
                && !a.get()[1].equals(ModelOptions.CUDA)); // the device decoder reads the checkpoint's own linears
    }

    /**
     * The decoders of Mixtral, DeepSeek-V3 (MLA) and Qwen3-MoE (q/k norms) against transformers, with their quantized
     * attention and dense MLPs dequantized by the test's reference linears.
     */
    @ParameterizedTest(name = "{0} on {1}, incremental={2}")
    @MethodSource("referenceLinearRuns")
    void decoderMatchesTransformersWithReferenceLinears(String name, String backend, boolean incremental) {
        ModelCases.Case c = ModelCases.load(name);
        ModelOptions options = ModelOptions.defaults().withBackend(backend).withThreads(2)
                .withLinears(ReferenceLinears.provider());
        try (Model model = Model.load(c.dir(), options); Session session = model.newSession()) {
            float[] got = incremental ? oneAtATime(session, c.inputIds(), c.vocab()) : session.prefill(c.inputIds());
            assertThat(relL2(got, c.logits())).as("logits rel L2 of %s on %s", name, backend)
                    .isLessThanOrEqualTo(c.tolerance(backend));
            assertClearTop1Agrees(c, got);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("quantizedCases")
    void quantizedLinearsAreRefusedByNameByTheUnquantizedFactory(String name) {
        ModelCases.Case c = ModelCases.load(name);
        assertThatThrownBy(() -> Model.load(c.dir(), ModelOptions.defaults().withBackend("emulation").withThreads(1)
                .withLinears(UnquantizedLinears::factory)))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("stored quantized")
                .hasMessageContaining("model.layers.0.");
    }

    /** Skips a cuda run on a machine without a usable CUDA device. */
    static void assumeGpu() {
        io.moe4j.backend.cuda.driver.CudaProbe probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
        Assumptions.assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    static float[] oneAtATime(Session session, int[] ids, int vocab) {
        float[] all = new float[ids.length * vocab];
        for (int t = 0; t < ids.length; t++) {
            System.arraycopy(session.decode(ids[t]), 0, all, t * vocab, vocab);
        }
        return all;
    }

    static void assertClearTop1Agrees(ModelCases.Case c, float[] got) {
        int v = c.vocab();
        float[] want = c.logits();
        int checked = 0;
        for (int t = 0; t < want.length / v; t++) {
            float[] row = Arrays.copyOfRange(want, t * v, (t + 1) * v);
            int best = argmax(row);
            float bestValue = row[best];
            row[best] = Float.NEGATIVE_INFINITY;
            float runnerUp = row[argmax(row)];
            if (bestValue - runnerUp > c.top1MinMargin()) {
                assertThat(argmax(Arrays.copyOfRange(got, t * v, (t + 1) * v)))
                        .as("argmax at position %d of %s", t, c.name()).isEqualTo(best);
                checked++;
            }
        }
        assertThat(checked).as("positions with a clear top-1 in %s", c.name()).isPositive();
    }

    static int argmax(float[] row) {
        int best = 0;
        for (int i = 1; i < row.length; i++) {
            if (row[i] > row[best]) {
                best = i;
            }
        }
        return best;
    }
}
