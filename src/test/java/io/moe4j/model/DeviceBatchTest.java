package io.moe4j.model;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link Model#step} over several device sessions of different lengths in one forward: each sequence's logits are
 * those it gets stepped alone, and the transformers logits of the case at its position, for every whole-model case;
 * decode steps (one token each, replayed from a recorded graph from the third on) and a step of uneven feeds.
 * Skipped without a GPU.
 */
class DeviceBatchTest {
    private static final String CASE = "m_gptoss_mxfp4";

    static java.util.stream.Stream<String> cases() {
        return ModelCases.names().stream();
    }

    /**
     * Three sequences of different lengths (2, 5 and 8 tokens of the case's prompt, which has 16 or more): six decode
     * steps, a step of uneven feeds, and a decode step after it.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void aBatchedStepGivesEachSequenceItsOwnLogits(String name) {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(name);
        int[] ids = c.inputIds();
        int v = c.vocab();
        int[] lengths = {2, 5, 8};
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(ModelOptions.CUDA))) {
            // one batched forward needs every layer routed on the device; else the sessions are stepped one by one
            assertThat(model.describe()).contains("routing on the device");
            List<Session> batched = new ArrayList<>();
            List<Session> alone = new ArrayList<>();
            try {
                for (int len : lengths) {
                    Session b = model.newSession();
                    batched.add(b);
                    b.prefillLast(Arrays.copyOf(ids, len));
                    Session a = model.newSession();
                    alone.add(a);
                    a.prefillLast(Arrays.copyOf(ids, len));
                }
                for (int step = 0; step < 6; step++) {
                    List<int[]> feed = new ArrayList<>();
                    for (Session b : batched) {
                        feed.add(new int[] {ids[(int) b.position()]});
                    }
                    float[][] got = model.step(batched, feed);
                    for (int i = 0; i < lengths.length; i++) {
                        float[] want = alone.get(i).decode(feed.get(i)[0]);
                        String what = "sequence " + i + ", step " + step;
                        assertThat(relL2(got[i], want)).as(what + " against stepping alone").isLessThanOrEqualTo(1e-5);
                        assertFixture(c, got[i], (int) batched.get(i).position() - 1, what);
                    }
                }
                // uneven feeds: two, one and one token (a prompt's rest joining decode steps)
                int[] sizes = {2, 1, 1};
                List<int[]> feed = new ArrayList<>();
                for (int i = 0; i < sizes.length; i++) {
                    int at = (int) batched.get(i).position();
                    feed.add(Arrays.copyOfRange(ids, at, at + sizes[i]));
                }
                float[][] got = model.step(batched, feed);
                for (int i = 0; i < sizes.length; i++) {
                    float[] want = alone.get(i).prefillLast(feed.get(i));
                    String what = "sequence " + i + ", uneven step";
                    // more routed pairs than a sequence alone brings can take the MXFP4 GEMV's pieces: other
                    // rounding, well inside the case's tolerance
                    assertThat(relL2(got[i], want)).as(what + " against stepping alone").isLessThanOrEqualTo(2e-3);
                    assertFixture(c, got[i], (int) batched.get(i).position() - 1, what);
                }
                assertThat(got[0]).hasSize(v);
                // a decode step after the uneven one, which grew the routing buffers: graphs recorded anew
                List<int[]> next = new ArrayList<>();
                for (Session b : batched) {
                    next.add(new int[] {ids[(int) b.position()]});
                }
                float[][] after = model.step(batched, next);
                for (int i = 0; i < lengths.length; i++) {
                    float[] want = alone.get(i).decode(next.get(i)[0]);
                    String what = "sequence " + i + ", the step after the uneven one";
                    assertThat(relL2(after[i], want)).as(what + " against stepping alone").isLessThanOrEqualTo(1e-5);
                    assertFixture(c, after[i], (int) batched.get(i).position() - 1, what);
                }
            } finally {
                batched.forEach(Session::close);
                alone.forEach(Session::close);
            }
        }
    }

    /**
     * Sequences of many rows in one step (three of 150 tokens, top-4: 1,800 pairs, one device-routed pass; three of
     * 3,000: 36,000 pairs, beyond {@code ModelOps.DEVICE_ROUTED_PAIRS}, so the batch's MoE layers route on the host):
     * each gets what it gets alone. A
     * sequence alone attends in tiles, a batch row by row: float rounding apart, which a model whose linears quantize
     * their inputs to FP4 can turn into a flipped code (m_qwen3_ct_nvfp4, three random prompts of 300: 0, 0 and 0.019,
     * and all three 0 with -Dmoe4j.cuda.attendTileRows=0), so the model here keeps its attention inputs in bf16.
     */
    @ParameterizedTest(name = "{0} rows a sequence")
    @org.junit.jupiter.params.provider.ValueSource(ints = {150, 3000})
    void aStepOfLongFeedsGivesEachSequenceWhatItGetsAlone(int rows) {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(CASE);
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(ModelOptions.CUDA))) {
            List<Session> batched = new ArrayList<>();
            List<int[]> feeds = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    batched.add(model.newSession());
                    feeds.add(rnd.ints(rows, 0, c.vocab()).toArray());
                }
                float[][] got = model.step(batched, feeds);
                double[] err = new double[feeds.size()];
                for (int i = 0; i < feeds.size(); i++) {
                    try (Session alone = model.newSession()) {
                        err[i] = relL2(got[i], alone.prefillLast(feeds.get(i)));
                    }
                }
                assertThat(Arrays.stream(err).max().orElseThrow())
                        .as("rel L2 of each sequence against its prompt alone: %s", Arrays.toString(err))
                        .isLessThanOrEqualTo(2e-3);
            } finally {
                batched.forEach(Session::close);
            }
        }
    }

    private static void assertFixture(ModelCases.Case c, float[] got, int position, String what) {
        int v = c.vocab();
        float[] want = Arrays.copyOfRange(c.logits(), position * v, (position + 1) * v);
        assertThat(relL2(got, want)).as(what + " against transformers at position " + position)
                .isLessThanOrEqualTo(c.tolerance("cuda"));
    }

    /**
     * Draws in a batched device step: a greedy sequence gets the argmax of the logits it gets alone, a sampled one the
     * token the host draws from them with the same random number (both drawn on the device, no logits back), the
     * other its logits; over decode steps replayed from the recorded graph.
     */
    @Test
    void drawsPickEachSequencesTokenOnTheDevice() {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(CASE);
        int[] ids = c.inputIds();
        int[] lengths = {5, 8, 11};
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(ModelOptions.CUDA))) {
            List<Session> batched = new ArrayList<>();
            List<Session> alone = new ArrayList<>();
            try {
                for (int len : lengths) {
                    Session b = model.newSession();
                    batched.add(b);
                    b.prefillLast(Arrays.copyOf(ids, len));
                    Session a = model.newSession();
                    alone.add(a);
                    a.prefillLast(Arrays.copyOf(ids, len));
                }
                // greedy, logits, sampled (a new random number each step)
                java.util.SplittableRandom rnd = new java.util.SplittableRandom(9);
                for (int step = 0; step < 5; step++) {
                    List<int[]> feed = new ArrayList<>();
                    for (Session b : batched) {
                        feed.add(new int[] {ids[(int) b.position()]});
                    }
                    TokenDraw[] draws = {TokenDraw.greedy(), null, new TokenDraw(0.8, 8, 0.95, 0, rnd.nextDouble())};
                    StepOutput got = model.step(batched, feed, draws);
                    for (int i = 0; i < lengths.length; i++) {
                        float[] want = alone.get(i).decode(feed.get(i)[0]);
                        String what = "sequence " + i + ", step " + step;
                        if (draws[i] != null) {
                            assertThat(got.logits()[i]).as(what).isNull();
                            assertThat(got.drawn()[i]).as(what).isEqualTo(draws[i].pick(want, 0, want.length, null));
                        } else {
                            assertThat(got.drawn()[i]).as(what).isEqualTo(-1);
                            assertThat(relL2(got.logits()[i], want)).as(what).isLessThanOrEqualTo(1e-5);
                        }
                    }
                }
            } finally {
                batched.forEach(Session::close);
                alone.forEach(Session::close);
            }
        }
    }
}
