package io.moe4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Session#decodeGreedy} (the model picks the next token where its logits are: on the device for cuda) against
 * the argmax of {@link Session#decode}'s logits in a twin session, step by step: the prompt of the gpt-oss case fed
 * one token at a time, then the greedy continuation. On cpu the host rule; on cuda the device kernel (skipped
 * without a usable CUDA device).
 */
class GreedyDecodeTest {
    @ParameterizedTest
    @ValueSource(strings = {"cpu", ModelOptions.CUDA})
    void theModelsChoiceIsTheArgmaxOfItsLogits(String backend) {
        if (backend.equals(ModelOptions.CUDA)) {
            ConformanceModelsTest.assumeGpu();
        }
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4");
        int[] ids = c.inputIds();
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(backend).withThreads(2));
                Session withLogits = model.newSession(); Session greedy = model.newSession()) {
            int steps = 0;
            int next = -1;
            for (int i = 0; i < ids.length + 12; i++) {
                int token = i < ids.length ? ids[i] : next;
                float[] logits = withLogits.decode(token);
                int want = Logits.argmax(logits, 0, logits.length);
                int got = greedy.decodeGreedy(token);
                assertThat(got).as("%s step %d", backend, i).isEqualTo(want);
                next = got;
                steps++;
            }
            assertThat(greedy.position()).isEqualTo(withLogits.position()).isEqualTo(steps);
        }
    }
}
