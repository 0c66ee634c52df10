package io.moe4j.model;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import io.moe4j.testing.SystemProperty;

import java.util.Arrays;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The KV cache: prompts fed in pieces of any size (by the caller, or by the session in passes of
 * {@code moe4j.passTokens}) give the reference logits, and sliding-window and chunked layers keep only the positions
 * a later query can still see.
 */
class KvCacheTest {

    static ModelOptions options() {
        return ModelOptions.defaults().withBackend("emulation").withThreads(1);
    }

    /** Feeds the case's ids in pieces of {@code piece} tokens, collecting every position's logits. */
    static float[] inPieces(Session session, int[] ids, int vocab, int piece) {
        float[] all = new float[ids.length * vocab];
        for (int start = 0; start < ids.length; start += piece) {
            int[] part = Arrays.copyOfRange(ids, start, Math.min(ids.length, start + piece));
            System.arraycopy(session.prefill(part), 0, all, start * vocab, part.length * vocab);
        }
        return all;
    }

    @ParameterizedTest(name = "pieces of {0}")
    @ValueSource(ints = {3, 5, 7, 9})
    void gptOssSlidingLayersMatchInPiecesAcrossTheWindow(int piece) {
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4");
        try (Model model = Model.load(c.dir(), options()); Session session = model.newSession()) {
            float[] got = inPieces(session, c.inputIds(), c.vocab(), piece);
            assertThat(relL2(got, c.logits())).isLessThanOrEqualTo(c.tolerance("emulation"));
        }
    }

    @ParameterizedTest(name = "pieces of {0}")
    @ValueSource(ints = {3, 6, 11})
    void llama4ChunkedLayersMatchInPiecesAcrossChunks(int piece) {
        ModelCases.Case c = ModelCases.load("m_llama4_bf16");
        try (Model model = Model.load(c.dir(), options()); Session session = model.newSession()) {
            float[] got = inPieces(session, c.inputIds(), c.vocab(), piece);
            assertThat(relL2(got, c.logits())).isLessThanOrEqualTo(c.tolerance("emulation"));
        }
    }

    /**
     * A prompt longer than a pass takes ({@code moe4j.passTokens}; 5 here) runs as passes of that many through the
     * cache, on the cpu backend: all logits, and the last token's alone, as the reference computes them in one go.
     */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.MethodSource("io.moe4j.model.DeviceBatchTest#cases")
    void aPromptLongerThanAPassRunsAsSeveralPasses(String name) {
        ModelCases.Case c = ModelCases.load(name);
        SystemProperty.with("moe4j.passTokens", "5", () -> {
            try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend("cpu").withThreads(2))) {
                assertPassesGiveTheReference(model, c, "cpu");
            }
        });
    }

    /** The case's prompt through two sessions of {@code model}: every logit, then the last one's alone. */
    static void assertPassesGiveTheReference(Model model, ModelCases.Case c, String backend) {
        int[] ids = c.inputIds();
        int v = c.vocab();
        try (Session all = model.newSession(); Session lastOnly = model.newSession()) {
            float[] got = all.prefill(ids);
            assertThat(got).hasSize(ids.length * v);
            assertThat(relL2(got, c.logits())).isLessThanOrEqualTo(c.tolerance(backend));
            ConformanceModelsTest.assertClearTop1Agrees(c, got);
            float[] last = lastOnly.prefillLast(ids);
            assertThat(last).hasSize(v);
            assertThat(relL2(last, Arrays.copyOfRange(c.logits(), (ids.length - 1) * v, ids.length * v)))
                    .isLessThanOrEqualTo(c.tolerance(backend));
            assertThat(lastOnly.position()).isEqualTo(ids.length);
        }
    }

    @Test
    void aPassOfNoTokensIsRefused() {
        SystemProperty.with("moe4j.passTokens", "0", () -> {
            try (Model model = Model.load(ModelCases.load("m_gptoss_mxfp4").dir(), options())) {
                org.assertj.core.api.Assertions.assertThatThrownBy(model::newSession)
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("moe4j.passTokens");
            }
        });
    }

    @Test
    void slidingLayersHoldAWindowAndFullLayersEverything() {
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4"); // layer 0 slides over 8 positions, layer 1 is full
        try (Model model = Model.load(c.dir(), options()); Session session = model.newSession()) {
            for (int t = 0; t < c.inputIds().length; t++) {
                session.decode(c.inputIds()[t]);
                int fed = t + 1;
                assertThat(session.cachedPositions(0)).as("sliding layer after %d", fed).isEqualTo(Math.min(fed, 7));
                assertThat(session.cachedPositions(1)).as("full layer after %d", fed).isEqualTo(fed);
            }
        }
    }

    /**
     * A session that keeps rows for a rewind ({@link Session#keepForRewind}) holds them beyond the window, goes back
     * past the window's start and, fed again, gives the reference logits (sliding gpt-oss, chunked Llama-4); one that
     * does not refuses the same rewind, changing nothing; nor can the kept one go back further than it kept rows for.
     */
    @ParameterizedTest
    @ValueSource(strings = {"m_gptoss_mxfp4", "m_llama4_bf16"})
    void aSessionKeptForRewindGoesBackPastTheWindow(String name) {
        ModelCases.Case c = ModelCases.load(name); // layer 0: a window of 8 positions (sliding or chunked)
        int[] ids = c.inputIds();
        int v = c.vocab();
        int rewind = 12;
        int back = ids.length - rewind;
        try (Model model = Model.load(c.dir(), options()); Session plain = model.newSession();
                Session kept = model.newSession()) {
            AttentionWindow window = model.layers().get(0).attention().window();
            assertThat(window.kind()).isNotEqualTo(AttentionWindow.Kind.FULL);
            long first = window.keepFrom(back);
            assertThat(first).as("the rewind goes past the window's start").isPositive();
            plain.prefill(ids);
            assertThat(plain.rewind(back)).as("without rows kept").isFalse();
            assertThat(plain.position()).isEqualTo(ids.length);
            kept.keepForRewind(rewind);
            kept.prefill(ids);
            assertThat(kept.cachedPositions(0)).as("rows kept beyond the window").isEqualTo(ids.length - first);
            assertThat(kept.rewind(first - 1)).as("further back than kept").isFalse();
            assertThat(kept.rewind(back)).isTrue();
            assertThat(kept.position()).isEqualTo(back);
            float[] again = kept.prefill(Arrays.copyOfRange(ids, back, ids.length));
            float[] want = Arrays.copyOfRange(c.logits(), back * v, ids.length * v);
            assertThat(relL2(again, want)).isLessThanOrEqualTo(c.tolerance("emulation"));
        }
    }

    @Test
    void chunkedLayersHoldTheCurrentChunkAndNopeLayersEverything() {
        ModelCases.Case c = ModelCases.load("m_llama4_bf16"); // layers 0-2 chunked by 8, layer 3 NoPE and full
        try (Model model = Model.load(c.dir(), options()); Session session = model.newSession()) {
            session.prefill(Arrays.copyOf(c.inputIds(), 13));
            assertThat(session.cachedPositions(0)).isEqualTo(13 % 8);
            assertThat(session.cachedPositions(3)).isEqualTo(13);
            session.prefill(Arrays.copyOfRange(c.inputIds(), 13, 16));
            assertThat(session.cachedPositions(2)).as("a chunk just completed: none of it is visible later").isZero();
            assertThat(session.cachedPositions(3)).isEqualTo(16);
        }
    }

    @Test
    void resetStartsTheSequenceAgain() {
        ModelCases.Case c = ModelCases.load("m_llama4_bf16");
        try (Model model = Model.load(c.dir(), options()); Session session = model.newSession()) {
            session.prefill(new int[] {7, 8, 9});
            session.reset();
            assertThat(session.position()).isZero();
            assertThat(relL2(session.prefill(c.inputIds()), c.logits())).isLessThanOrEqualTo(c.tolerance("emulation"));
        }
    }

    @Test
    void prefillLastGivesTheLastRowOfPrefill() {
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4");
        try (Model model = Model.load(c.dir(), options()); Session a = model.newSession(); Session b = model.newSession()) {
            float[] all = a.prefill(c.inputIds());
            float[] last = b.prefillLast(c.inputIds());
            int n = c.inputIds().length;
            assertThat(last).containsExactly(Arrays.copyOfRange(all, (n - 1) * c.vocab(), n * c.vocab()));
        }
    }
}
