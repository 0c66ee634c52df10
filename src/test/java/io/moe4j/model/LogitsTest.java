package io.moe4j.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moe4j.generate.Sampler;
import org.junit.jupiter.api.Test;

/** The greedy rule every runtime follows: the first largest value; NaN never wins after the first position. */
class LogitsTest {
    @Test
    void firstLargestWinsAndNanNeverWinsLater() {
        float nan = Float.NaN;
        float inf = Float.NEGATIVE_INFINITY;
        assertThat(Logits.argmax(new float[] {1, 3, 2, 3}, 0, 4)).isEqualTo(1);
        assertThat(Logits.argmax(new float[] {inf, inf, inf}, 0, 3)).isEqualTo(0);
        assertThat(Logits.argmax(new float[] {inf, -5, inf}, 0, 3)).isEqualTo(1);
        assertThat(Logits.argmax(new float[] {1, nan, 2}, 0, 3)).isEqualTo(2);
        assertThat(Logits.argmax(new float[] {nan, 5, 7}, 0, 3)).isEqualTo(0);
        assertThat(Logits.argmax(new float[] {9, 1, 3, 8}, 1, 3)).isEqualTo(2); // offset: values 1, 3, 8
        assertThatThrownBy(() -> Logits.argmax(new float[] {1}, 0, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theSamplersGreedyChoiceIsThisRule() {
        float[] x = {0.5f, 2f, -1f, 2f};
        assertThat(Sampler.argmax(x, 0, 4, null)).isEqualTo(Logits.argmax(x, 0, 4));
        assertThat(Sampler.argmax(x, 0, 4, new boolean[] {true, false, true, true})).isEqualTo(3);
    }
}
