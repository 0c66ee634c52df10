package io.moe4j.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A model's cpu logits do not depend on how many threads compute them: every parallel loop splits rows, heads or
 * experts between the workers, never one sum, so one thread and three give the same bits (for a prompt, and for a
 * token after it through the KV cache).
 */
class ThreadCountTest {
    static Stream<String> cases() {
        return ModelCases.names().stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void oneThreadAndThreeGiveTheSameLogits(String name) {
        ModelCases.Case c = ModelCases.load(name);
        int[] ids = c.inputIds();
        float[][] one = logits(c, 1, ids);
        float[][] three = logits(c, 3, ids);
        assertThat(three[0]).as("prompt").isEqualTo(one[0]);
        assertThat(three[1]).as("the next token").isEqualTo(one[1]);
    }

    private static float[][] logits(ModelCases.Case c, int threads, int[] ids) {
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withThreads(threads));
                Session s = model.newSession()) {
            float[] prompt = s.forward(java.util.Arrays.copyOf(ids, ids.length - 1), true);
            float[] next = s.decode(ids[ids.length - 1]);
            return new float[][] {prompt, next};
        }
    }
}
