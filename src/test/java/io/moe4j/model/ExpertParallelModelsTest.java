package io.moe4j.model;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.nccl.Nccl;
import io.moe4j.backend.cuda.nccl.NcclProbe;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
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
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Whole models with their experts spread over two GPUs ({@code --gpus 2}): every case of ../shared/conformance-models
 * gives the same logits as on one GPU (within the case's any-backend tolerance) and the transformers logits, as one
 * prompt and one token at a time; two sequences at once live on different GPUs (data-parallel attention) and each
 * gets what it gets alone. Skipped without two CUDA devices and NCCL.
 */
class ExpertParallelModelsTest {
    private static final int GPUS = 2;

    @BeforeAll
    static void requireTwoGpusAndNccl() {
        CudaProbe cuda = CudaRuntime.probe();
        assumeTrue(cuda.available(), () -> "no usable CUDA device: " + cuda.reason());
        assumeTrue(cuda.deviceCount() >= GPUS, () -> cuda.deviceCount() + " CUDA device(s): --gpus " + GPUS
                + " needs " + GPUS);
        NcclProbe nccl = Nccl.probe();
        assumeTrue(nccl.available(), () -> "NCCL not available: " + nccl.reason());
    }

    static Stream<Arguments> runs() {
        List<Arguments> out = new ArrayList<>();
        for (String name : ModelCases.names()) {
            out.add(Arguments.of(name, false));
            out.add(Arguments.of(name, true));
        }
        return out.stream();
    }

    private static ModelOptions cuda(int gpus) {
        return ModelOptions.defaults().withBackend(ModelOptions.CUDA).withThreads(2).withGpus(gpus);
    }

    @ParameterizedTest(name = "{0}, incremental={1}")
    @MethodSource("runs")
    void twoGpusGiveTheLogitsOfOne(String name, boolean incremental) {
        ModelCases.Case c = ModelCases.load(name);
        float[] one = logits(c, cuda(1), incremental);
        float[] two = logits(c, cuda(GPUS), incremental);
        double tolerance = c.tolerance(ModelOptions.CUDA);
        assertThat(relL2(two, one)).as("%s: %d GPUs against one", name, GPUS).isLessThanOrEqualTo(tolerance);
        assertThat(relL2(two, c.logits())).as("%s: %d GPUs against transformers", name, GPUS)
                .isLessThanOrEqualTo(tolerance);
        ConformanceModelsTest.assertClearTop1Agrees(c, two);
    }

    private static float[] logits(ModelCases.Case c, ModelOptions options, boolean incremental) {
        try (Model model = Model.load(c.dir(), options); Session session = model.newSession()) {
            return incremental ? ConformanceModelsTest.oneAtATime(session, c.inputIds(), c.vocab())
                    : session.prefill(c.inputIds());
        }
    }

    /**
     * Two sessions at once, their tokens interleaved: they live on different GPUs, each rank joining the other's
     * passes with no rows, and each gets the logits it gets alone.
     */
    @Test
    void twoSequencesOnTwoGpusEachGetWhatTheyGetAlone() {
        ModelCases.Case c = ModelCases.load(ModelCases.names().getFirst());
        float[] alone = logits(c, cuda(GPUS), true);
        int[] ids = c.inputIds();
        int v = c.vocab();
        try (Model model = Model.load(c.dir(), cuda(GPUS)); Session a = model.newSession();
             Session b = model.newSession()) {
            assertThat(model.describe()).contains("expert-parallel over " + GPUS + " GPUs");
            float[] gotA = new float[ids.length * v];
            float[] gotB = new float[ids.length * v];
            for (int t = 0; t < ids.length; t++) {
                System.arraycopy(a.decode(ids[t]), 0, gotA, t * v, v);
                System.arraycopy(b.decode(ids[t]), 0, gotB, t * v, v);
            }
            assertThat(relL2(gotA, alone)).as("first session").isLessThan(1e-6);
            assertThat(relL2(gotB, alone)).as("second session, on the other GPU").isLessThan(1e-6);
        }
    }

    /**
     * A batched step over sequences on both GPUs (two on the first, one on the second, prompts of different lengths,
     * then a token each): every sequence gets the logits a session alone gets for the same tokens.
     */
    @Test
    void aBatchedStepOverBothGpusGivesEachSequenceItsOwnLogits() {
        ModelCases.Case c = ModelCases.load(ModelCases.names().getFirst());
        int[] ids = c.inputIds();
        int[][] prompts = {Arrays.copyOf(ids, 3), Arrays.copyOfRange(ids, 1, 6), Arrays.copyOfRange(ids, 2, 4)};
        int[] next = {ids[4], ids[7], ids[5]};
        double tolerance = c.tolerance(ModelOptions.CUDA);
        try (Model model = Model.load(c.dir(), cuda(GPUS))) {
            List<Session> sessions = new ArrayList<>();
            try {
                for (int i = 0; i < prompts.length; i++) {
                    sessions.add(model.newSession());
                }
                float[][] first = model.step(sessions, Arrays.asList(prompts));
                float[][] second = model.step(sessions, List.of(new int[] {next[0]}, new int[] {next[1]},
                        new int[] {next[2]}));
                for (int i = 0; i < prompts.length; i++) {
                    int[] all = Arrays.copyOf(prompts[i], prompts[i].length + 1);
                    all[prompts[i].length] = next[i];
                    float[] alone;
                    try (Session s = model.newSession()) {
                        alone = s.prefill(all);
                    }
                    int v = c.vocab();
                    float[] wantFirst = Arrays.copyOfRange(alone, (prompts[i].length - 1) * v, prompts[i].length * v);
                    float[] wantSecond = Arrays.copyOfRange(alone, prompts[i].length * v, (prompts[i].length + 1) * v);
                    assertThat(relL2(first[i], wantFirst)).as("sequence %d, its prompt", i).isLessThan(tolerance);
                    assertThat(relL2(second[i], wantSecond)).as("sequence %d, its next token", i)
                            .isLessThan(tolerance);
                }
            } finally {
                sessions.forEach(Session::close);
            }
        }
    }

    /** On a machine with more than two GPUs, every case's prompt over all of them against one GPU. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.moe4j.model.ModelCases#names")
    void everyGpuOfTheMachineGivesTheLogitsOfOne(String name) {
        int devices = CudaRuntime.probe().deviceCount();
        assumeTrue(devices > GPUS, () -> devices + " CUDA devices: the two-GPU tests cover them");
        ModelCases.Case c = ModelCases.load(name);
        float[] one = logits(c, cuda(1), false);
        float[] all = logits(c, cuda(devices), false);
        assertThat(relL2(all, one)).as("%s: %d GPUs against one", name, devices)
                .isLessThanOrEqualTo(c.tolerance(ModelOptions.CUDA));
    }

    @Test
    void moreGpusThanTheMachineHasAreRefusedNamingTheCount() {
        int devices = CudaRuntime.probe().deviceCount();
        ModelCases.Case c = ModelCases.load(ModelCases.names().getFirst());
        assertThatThrownBy(() -> Model.load(c.dir(), cuda(devices + 1))).isInstanceOf(MoeException.class)
                .hasMessageContaining("--gpus " + (devices + 1))
                .hasMessageContaining("this machine has " + devices + " CUDA devices");
    }
}
