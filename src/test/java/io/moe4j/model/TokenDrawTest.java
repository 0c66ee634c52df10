package io.moe4j.model;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The draw rule every runtime follows: the kept tokens are cut in logit order (equal logits by id) and walked in id
 * order; NaN and -infinity are never drawn.
 */
class TokenDrawTest {

    private static float ln(double w) {
        return (float) Math.log(w);
    }

    private static TokenDraw draw(double t, int k, double p, double minP, double u) {
        return new TokenDraw(t, k, p, minP, u);
    }

    @Test
    void theDrawWalksTheKeptTokensInIdOrder() {
        float[] logits = {0f, ln(3)}; // weights 1 and 3 of 4: id 0 holds [0, 1/4) of the walk
        assertThat(draw(1, 0, 1, 0, 0.2).pick(logits, 0, 2, null)).isEqualTo(0);
        assertThat(draw(1, 0, 1, 0, 0.3).pick(logits, 0, 2, null)).isEqualTo(1);
        // the same with a cut that keeps both (top-k 2): the sorted path walks by id too
        assertThat(draw(1, 2, 1, 0, 0.2).pick(logits, 0, 2, null)).isEqualTo(0);
        assertThat(draw(1, 2, 1, 0, 0.3).pick(logits, 0, 2, null)).isEqualTo(1);
    }

    @Test
    void topKCutsEqualLogitsByLowerId() {
        float[] logits = {1f, 2f, 2f, 2f, 0f}; // top-2 keeps ids 1 and 2 (of the three 2s, the lowest ids), halves each
        assertThat(draw(1, 2, 1, 0, 0.25).pick(logits, 0, 5, null)).isEqualTo(1);
        assertThat(draw(1, 2, 1, 0, 0.75).pick(logits, 0, 5, null)).isEqualTo(2);
    }

    @Test
    void topPAndMinPKeepTheLikeliestPrefix() {
        float[] logits = {ln(1), ln(2), ln(3), ln(4)}; // weights 1..4 of 10
        // top-p 0.65: 4 (0.4) then 3 (0.7 >= 0.65) are kept; 3 of their 7 is id 2's
        assertThat(draw(1, 0, 0.65, 0, 0.4).pick(logits, 0, 4, null)).isEqualTo(2);
        assertThat(draw(1, 0, 0.65, 0, 0.5).pick(logits, 0, 4, null)).isEqualTo(3);
        // min-p 0.6: weights of at least 0.6 x 4 = 2.4 are kept, ids 2 and 3 again
        assertThat(draw(1, 0, 1, 0.6, 0.4).pick(logits, 0, 4, null)).isEqualTo(2);
        assertThat(draw(1, 0, 1, 0.6, 0.5).pick(logits, 0, 4, null)).isEqualTo(3);
        // top-k 3 then top-p 0.5 of those 9: 4 (0.44) then 3 (0.78) are kept
        assertThat(draw(1, 3, 0.5, 0, 0.99).pick(logits, 0, 4, null)).isEqualTo(3);
    }

    @Test
    void nanAndNegativeInfinityAreNeverDrawn() {
        float[] logits = {Float.NaN, Float.NEGATIVE_INFINITY, -50f, Float.NaN};
        for (double u : new double[] {0, 0.5, 0.999}) {
            assertThat(draw(1, 0, 1, 0, u).pick(logits, 0, 4, null)).isEqualTo(2);
            assertThat(draw(1, 2, 0.9, 0.1, u).pick(logits, 0, 4, null)).isEqualTo(2);
        }
        float[] none = {Float.NaN, Float.NEGATIVE_INFINITY};
        assertThatThrownBy(() -> draw(1, 0, 1, 0, 0.5).pick(none, 0, 2, null)).hasMessageContaining("no token");
        assertThatThrownBy(() -> draw(1, 5, 1, 0, 0.5).pick(none, 0, 2, null)).hasMessageContaining("no token");
    }

    @Test
    void greedyIsTheArgmaxAndBadRulesAreRefused() {
        float[] logits = {1f, 3f, 3f};
        assertThat(TokenDraw.greedy().pick(logits, 0, 3, null)).isEqualTo(Logits.argmax(logits, 0, 3));
        assertThatThrownBy(() -> draw(1, 0, 1, 0, 1.0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> draw(-1, 0, 1, 0, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> draw(1, 0, 0, 0, 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
