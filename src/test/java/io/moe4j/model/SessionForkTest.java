package io.moe4j.model;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A forked session holds a copy of the first positions: fed the rest of the case's tokens, its logits are
 * transformers' for those positions, and the session it came from goes on unchanged (every whole-model case, on the
 * cpu and, with a GPU, on the device).
 */
class SessionForkTest {
    static Stream<Arguments> runs() {
        List<Arguments> out = new ArrayList<>();
        for (String name : ModelCases.names()) {
            for (String backend : List.of("cpu", "cuda")) {
                out.add(Arguments.of(name, backend));
            }
        }
        return out.stream();
    }

    /** Rows [from, to) of the case's expected logits. */
    private static float[] expected(ModelCases.Case c, int from, int to) {
        return Arrays.copyOfRange(c.logits(), from * c.vocab(), to * c.vocab());
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("runs")
    void aForkGoesOnAsTheSequenceWouldHave(String name, String backend) {
        ModelCases.Case c = ModelCases.load(name);
        if (backend.equals(ModelOptions.CUDA)) {
            ConformanceModelsTest.assumeGpu();
        }
        int[] ids = c.inputIds();
        int t = ids.length;
        int held = t - 4;
        int at = t / 2;
        double tolerance = c.tolerance(backend);
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(backend).withThreads(2));
             Session s = model.newSession()) {
            // a sliding or chunked host layer keeps the rows a copy from `at` needs only when asked to
            s.keepForRewind(t);
            s.prefill(Arrays.copyOf(ids, held));
            try (Session fork = s.fork(at)) {
                assertThat(fork).isNotNull();
                assertThat(fork.position()).isEqualTo(at);
                float[] got = fork.prefill(Arrays.copyOfRange(ids, at, t));
                assertThat(relL2(got, expected(c, at, t))).as("the fork's logits").isLessThanOrEqualTo(tolerance);
            }
            // the original holds its positions still, and goes on
            assertThat(s.position()).isEqualTo(held);
            float[] rest = s.prefill(Arrays.copyOfRange(ids, held, t));
            assertThat(relL2(rest, expected(c, held, t))).as("the original's logits").isLessThanOrEqualTo(tolerance);
        }
    }

    /** Without rows kept for it, a windowed host layer cannot give a fork at an early position: none is made. */
    @ParameterizedTest
    @MethodSource("windowedCases")
    void aWindowedHostLayerForksOnlyWhereItHoldsTheRows(String name) {
        ModelCases.Case c = ModelCases.load(name);
        int[] ids = c.inputIds();
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend("cpu").withThreads(2));
             Session s = model.newSession()) {
            s.prefill(ids);
            assertThat(s.fork(1)).isNull();
            assertThat(s.position()).isEqualTo(ids.length);
            try (Session whole = s.fork(ids.length)) {
                assertThat(whole).isNotNull();
            }
        }
    }

    static Stream<String> windowedCases() {
        return Stream.of("m_gptoss_mxfp4", "m_llama4_bf16");
    }
}
