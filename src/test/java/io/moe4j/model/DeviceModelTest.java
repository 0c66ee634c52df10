package io.moe4j.model;

import io.moe4j.MoeException;
import io.moe4j.testing.SystemProperty;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The decoder resident on the GPU ({@code backend cuda}) beyond one prompt or one token at a time: a prompt fed in
 * uneven chunks or in passes of a few tokens, experts chosen on the host (every case), a rewind that goes back past
 * the sliding window and continues, bad token ids, and the session limits (the gpt-oss case); all against the
 * transformers logits. Skipped without a usable CUDA device.
 */
class DeviceModelTest {
    private static final String CASE = "m_gptoss_mxfp4";

    private static Model load(ModelCases.Case c) {
        return Model.load(c.dir(), ModelOptions.defaults().withBackend(ModelOptions.CUDA).withThreads(2));
    }

    /**
     * Tokens drawn on the device ({@link Session#decodeDrawn}) are the tokens the host draws from the same model's
     * logits with the same random numbers, for a plain draw and one cut by top-k, top-p and min-p.
     */
    @Test
    void tokensDrawnOnTheDeviceAreTheHostsDrawsFromItsLogits() {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(CASE);
        int[] prompt = c.inputIds();
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
        try (Model model = load(c); Session drawn = model.newSession(); Session host = model.newSession()) {
            TokenDraw[] rules = {new TokenDraw(1.0, 0, 1, 0, 0), new TokenDraw(0.8, 20, 0.9, 0.02, 0)};
            for (TokenDraw rule : rules) {
                drawn.reset();
                host.reset();
                float[] logits = host.prefillLast(prompt);
                drawn.prefillLast(prompt);
                int token = TokenDraw.greedy().pick(logits, 0, logits.length, null);
                for (int step = 0; step < 12; step++) {
                    TokenDraw d = new TokenDraw(rule.temperature(), rule.topK(), rule.topP(), rule.minP(),
                            rnd.nextDouble());
                    int onDevice = drawn.decodeDrawn(token, d);
                    logits = host.decode(token);
                    assertThat(onDevice).as("step %d, %s", step, d).isEqualTo(d.pick(logits, 0, logits.length, null));
                    token = onDevice;
                }
            }
        }
    }

    @Test
    void describeNamesTheDevice() {
        ConformanceModelsTest.assumeGpu();
        try (Model model = load(ModelCases.load(CASE))) {
            assertThat(model.describe()).startsWith("gpt_oss: ").contains("; cuda; resident on ").contains("lm_head bf16");
        }
    }

    /** The device decoder tells its load progress as the host's does: each layer once, in order. */
    @Test
    void eachLayerUploadedIsTold() {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(CASE);
        java.util.List<Integer> done = new java.util.ArrayList<>();
        java.util.Set<Integer> counts = new java.util.HashSet<>();
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(ModelOptions.CUDA).withThreads(2)
                .withLoadListener((n, of) -> {
                    done.add(n);
                    counts.add(of);
                }))) {
            int layers = model.config().layers().size();
            assertThat(done).isEqualTo(java.util.stream.IntStream.rangeClosed(1, layers).boxed().toList());
            assertThat(counts).containsExactly(layers);
        }
    }

    /** Every case's prompt in chunks of 1, 6, 2 and 9 tokens (then the rest): each chunk reads the cache the others wrote. */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.MethodSource("io.moe4j.model.DeviceBatchTest#cases")
    void aPromptInUnevenChunksGivesTheSameLogits(String name) {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(name);
        int[] ids = c.inputIds();
        int v = c.vocab();
        try (Model model = load(c); Session session = model.newSession()) {
            float[] got = new float[ids.length * v];
            int at = 0;
            for (int size : new int[] {1, 6, 2, 9}) {
                int n = Math.min(size, ids.length - at);
                System.arraycopy(session.prefill(Arrays.copyOfRange(ids, at, at + n)), 0, got, at * v, n * v);
                at += n;
            }
            if (at < ids.length) {
                float[] rest = session.prefill(Arrays.copyOfRange(ids, at, ids.length));
                System.arraycopy(rest, 0, got, at * v, rest.length);
            }
            assertThat(relL2(got, c.logits())).isLessThanOrEqualTo(c.tolerance("cuda"));
            ConformanceModelsTest.assertClearTop1Agrees(c, got);
        }
    }

    /**
     * A prompt longer than a pass takes ({@code moe4j.passTokens}, 4096 by default; 5 here) runs as passes of that
     * many through the cache: all logits, and the last token's alone.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.MethodSource("io.moe4j.model.DeviceBatchTest#cases")
    void aPromptLongerThanAPassRunsAsSeveralPasses(String name) {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(name);
        SystemProperty.with("moe4j.passTokens", "5", () -> {
            try (Model model = load(c)) {
                KvCacheTest.assertPassesGiveTheReference(model, c, "cuda");
            }
        });
    }

    /**
     * Every pass of a sequence attended in tiles ({@code moe4j.cuda.attendTileRows=1}: the path of prompts of 64 rows
     * and more, which the cases' short prompts do not reach by default), as one prompt and in passes of 5 tokens.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.MethodSource("io.moe4j.model.DeviceBatchTest#cases")
    void aPromptAttendedInTilesGivesTheSameLogits(String name) {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(name);
        SystemProperty.with("moe4j.cuda.attendTileRows", "1", () -> {
            try (Model model = load(c)) {
                KvCacheTest.assertPassesGiveTheReference(model, c, "cuda");
            }
            SystemProperty.with("moe4j.passTokens", "5", () -> {
                try (Model model = load(c)) {
                    KvCacheTest.assertPassesGiveTheReference(model, c, "cuda");
                }
            });
        });
    }

    /**
     * Experts chosen on the host ({@code moe4j.cuda.hostRouting}, the path of prompts beyond one device-routed pass):
     * half the prompt in one pass, then a token at a time, every layer's experts in the sequence's one workspace,
     * whose recorded graphs must not be replayed for another layer's experts.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.MethodSource("io.moe4j.model.DeviceBatchTest#cases")
    void expertsChosenOnTheHostGiveTheSameLogits(String name) {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(name);
        int[] ids = c.inputIds();
        int v = c.vocab();
        SystemProperty.with("moe4j.cuda.hostRouting", "true", () -> {
            try (Model model = load(c); Session session = model.newSession()) {
                float[] got = new float[ids.length * v];
                int half = ids.length / 2;
                System.arraycopy(session.prefill(Arrays.copyOf(ids, half)), 0, got, 0, half * v);
                for (int t = half; t < ids.length; t++) {
                    System.arraycopy(session.decode(ids[t]), 0, got, t * v, v);
                }
                assertThat(relL2(got, c.logits())).isLessThanOrEqualTo(c.tolerance("cuda"));
                ConformanceModelsTest.assertClearTop1Agrees(c, got);
            }
        });
    }

    /**
     * DeepSeek's q_a_proj and kv_a_proj_with_mqa as one stacked linear (their input norm applying its rule) give the
     * bits of the two linears apart: a prompt's rows (split out of the stacked rows) and tokens one at a time (read
     * in place). That the case's layers do stack is DeviceModelSupportTest's.
     */
    @Test
    void deepSeeksStackedQaAndKvaGiveTheSeparateLinearsBits() {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load("m_deepseek_ct_fp8_block");
        int[] ids = c.inputIds();
        float[][] prompt = new float[2][];
        float[][] steps = new float[2][];
        for (int stacked = 0; stacked < 2; stacked++) {
            int k = stacked;
            io.moe4j.testing.SystemProperty.with("moe4j.cuda.stackMlaInputs", k == 1 ? "true" : "false", () -> {
                try (Model model = load(c); Session session = model.newSession()) {
                    prompt[k] = session.prefill(ids);
                    session.reset();
                    float[] last = null;
                    for (int id : ids) {
                        last = session.decode(id);
                    }
                    steps[k] = last;
                }
            });
        }
        assertThat(prompt[1]).as("a prompt's logits").containsExactly(prompt[0]);
        assertThat(steps[1]).as("the last token's logits, one token at a time").containsExactly(steps[0]);
        assertThat(relL2(prompt[1], c.logits())).isLessThanOrEqualTo(c.tolerance("cuda"));
    }

    @Test
    void rewindingPastTheSlidingWindowAndFeedingAgainGivesTheSameLogits() {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(CASE);
        int[] ids = c.inputIds();
        int v = c.vocab();
        int back = 3; // before the last sliding window of the case (8 positions) begins
        try (Model model = load(c); Session session = model.newSession()) {
            session.prefill(ids);
            assertThat(session.rewind(back)).isTrue();
            assertThat(session.position()).isEqualTo(back);
            float[] again = session.prefill(Arrays.copyOfRange(ids, back, ids.length));
            float[] want = Arrays.copyOfRange(c.logits(), back * v, ids.length * v);
            assertThat(relL2(again, want)).isLessThanOrEqualTo(c.tolerance("cuda"));
            float[] last = session.prefillLast(new int[] {ids[0]});
            assertThat(last).hasSize(v);
            assertThat(session.position()).isEqualTo(ids.length + 1);
        }
    }

    @Test
    void twoSessionsOfOneModelInterleaveWithoutSharingState() {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(CASE);
        int[] ids = c.inputIds();
        int v = c.vocab();
        int half = ids.length / 2;
        try (Model model = load(c); Session a = model.newSession(); Session b = model.newSession()) {
            float[] first = a.prefill(Arrays.copyOf(ids, half));
            float[] other = b.prefill(new int[] {ids[3], ids[1], ids[4]}); // different tokens in between
            float[] rest = ConformanceModelsTest.oneAtATime(a, Arrays.copyOfRange(ids, half, ids.length), v);
            float[] got = new float[ids.length * v];
            System.arraycopy(first, 0, got, 0, first.length);
            System.arraycopy(rest, 0, got, first.length, rest.length);
            assertThat(relL2(got, c.logits())).isLessThanOrEqualTo(c.tolerance("cuda"));
            assertThat(other).hasSize(3 * v);
            assertThat(b.position()).isEqualTo(3);
        }
    }

    @Test
    void badTokensAndOverflowAreRefusedAndLeaveTheSessionUsable() {
        ConformanceModelsTest.assumeGpu();
        ModelCases.Case c = ModelCases.load(CASE);
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(ModelOptions.CUDA).withThreads(2)
                .withContextLimit(4)); Session session = model.newSession()) {
            assertThatThrownBy(() -> session.decode(c.vocab())).isInstanceOf(MoeException.class)
                    .hasMessageContaining("outside the vocabulary");
            assertThatThrownBy(() -> session.prefill(new int[] {1, 2, 3, 4, 5})).isInstanceOf(MoeException.class)
                    .hasMessageContaining("context overflow");
            assertThat(session.position()).isZero();
            float[] first = session.prefill(Arrays.copyOf(c.inputIds(), 4));
            float[] want = Arrays.copyOf(c.logits(), 4 * c.vocab());
            assertThat(relL2(first, want)).isLessThanOrEqualTo(c.tolerance("cuda"));
        }
    }
}
