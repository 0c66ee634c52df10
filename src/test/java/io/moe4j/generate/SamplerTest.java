package io.moe4j.generate;

import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class SamplerTest {

    @Test
    void greedyTakesTheHighestLogitAndTheLowestIdOnTies() {
        Sampler s = new Sampler(SamplingParams.greedy());
        assertThat(s.sample(new float[]{0, 3, 1, 3}, 0, 4)).isEqualTo(1);
        assertThat(s.sample(new float[]{9, 0, 3, 1, 3}, 1, 4)).isEqualTo(1);
    }

    @Test
    void theSameSeedDrawsTheSameTokens() {
        float[] logits = {1, 2, 3, 0.5f, 2.5f};
        SamplingParams p = new SamplingParams(1.0, 0, 1, 0, 42);
        Sampler a = new Sampler(p);
        Sampler b = new Sampler(p);
        for (int i = 0; i < 50; i++) {
            assertThat(a.sample(logits, 0, 5)).isEqualTo(b.sample(logits, 0, 5));
        }
    }

    @Test
    void drawsFollowTheSoftmaxOfTheTemperedLogits() {
        float[] logits = {0, (float) Math.log(3)};   // probabilities 1/4, 3/4 at temperature 1
        Sampler s = new Sampler(new SamplingParams(1.0, 0, 1, 0, 7));
        int ones = 0;
        int n = 20000;
        for (int i = 0; i < n; i++) {
            ones += s.sample(logits, 0, 2);
        }
        assertThat(ones / (double) n).isCloseTo(0.75, within(0.02));
        // Temperature 2 flattens: probabilities ∝ exp(l / 2) → 1 : √3.
        Sampler hot = new Sampler(new SamplingParams(2.0, 0, 1, 0, 7));
        ones = 0;
        for (int i = 0; i < n; i++) {
            ones += hot.sample(logits, 0, 2);
        }
        assertThat(ones / (double) n).isCloseTo(Math.sqrt(3) / (1 + Math.sqrt(3)), within(0.02));
    }

    @Test
    void topKTopPAndMinPCutTheTail() {
        float[] logits = {5, 4, 3, -10, 4.5f};
        for (long seed = 0; seed < 200; seed++) {
            assertThat(new Sampler(new SamplingParams(1, 2, 1, 0, seed)).sample(logits, 0, 5)).isIn(0, 4);
            // Probabilities ≈ .48 (0), .29 (4), .18 (1): p = 0.5 keeps the first two.
            assertThat(new Sampler(new SamplingParams(1, 0, 0.5, 0, seed)).sample(logits, 0, 5)).isIn(0, 4);
            // min-p 0.5: tokens at least half as likely as the top one: only 0 and 4 (exp(-0.5) ≈ 0.61).
            assertThat(new Sampler(new SamplingParams(1, 0, 1, 0.5, seed)).sample(logits, 0, 5)).isIn(0, 4);
        }
    }

    @Test
    void aMaskLimitsTheChoice() {
        float[] logits = {5, 4, 3};
        boolean[] allowed = {false, false, true};
        assertThat(new Sampler(SamplingParams.greedy()).sample(logits, 0, 3, allowed)).isEqualTo(2);
        assertThat(new Sampler(new SamplingParams(1, 0, 0.9, 0, 3)).sample(logits, 0, 3, allowed)).isEqualTo(2);
        assertThatThrownBy(() -> new Sampler(SamplingParams.greedy()).sample(logits, 0, 3, new boolean[3]))
                .isInstanceOf(IllegalStateException.class);
    }

    @Test
    void badParametersAreNamed() {
        assertThatThrownBy(() -> new SamplingParams(-1, 0, 1, 0, 0)).isInstanceOf(MoeException.class)
                .hasMessageContaining("temperature");
        assertThatThrownBy(() -> new SamplingParams(1, -2, 1, 0, 0)).hasMessageContaining("top-k");
        assertThatThrownBy(() -> new SamplingParams(1, 0, 0, 0, 0)).hasMessageContaining("top-p");
        assertThatThrownBy(() -> new SamplingParams(1, 0, 1, 2, 0)).hasMessageContaining("min-p");
    }
}
