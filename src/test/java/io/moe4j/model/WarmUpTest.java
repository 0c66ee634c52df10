package io.moe4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * {@link Model#warmUp}: a throwaway sequence that leaves nothing behind, so a session after it computes what a session
 * before it computed, and a model whose context is shorter than the warm-up's prompt still warms up.
 */
class WarmUpTest {
    @Test
    void sessionsAfterTheWarmUpComputeWhatSessionsBeforeItDid() {
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4");
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withThreads(2))) {
            float[] before = logits(model, c.inputIds());
            assertThat(model.warmUp()).isPositive();
            assertThat(logits(model, c.inputIds())).isEqualTo(before);
        }
    }

    @Test
    void aContextShorterThanTheWarmUpsPromptStillWarmsUp() {
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4");
        for (int limit : new int[] {1, 2, 5}) {
            try (Model model = Model.load(c.dir(), ModelOptions.defaults().withThreads(2).withContextLimit(limit))) {
                assertThat(model.warmUp()).as("context %d", limit).isPositive();
            }
        }
    }

    private static float[] logits(Model model, int[] ids) {
        try (Session s = model.newSession()) {
            return s.forward(ids, true);
        }
    }
}
