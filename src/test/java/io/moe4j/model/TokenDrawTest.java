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

    /**
     * Greedy takes argmax's id (its rule stops at a NaN, which no value exceeds, as the device kernel does) and fails
     * where that id's logit is NaN or -infinity, as the draws fail without a finite candidate: a NaN model output is
     * an error, not token 0.
     */
    @Test
    void greedyFailsOnANanOrNegativeInfinityChoice() {
        assertThat(draw(0, 0, 1, 0, 0).pick(new float[] {1f, 3f, Float.POSITIVE_INFINITY}, 0, 3, null)).isEqualTo(2);
        for (float[] row : new float[][] {{Float.NaN, 2f, 1f}, {Float.NaN, Float.NaN},
                {Float.NEGATIVE_INFINITY, Float.NEGATIVE_INFINITY}}) {
            assertThatThrownBy(() -> draw(0, 0, 1, 0, 0).pick(row, 0, row.length, null))
                    .hasMessageContaining("no token");
            assertThat(TokenDraw.pickOrNone(TokenDraw.greedy(), row)).isEqualTo(-1);
        }
        boolean[] onlyTheNan = {true, false, false};
        assertThatThrownBy(() -> draw(0, 0, 1, 0, 0).pick(new float[] {Float.NaN, 2f, 1f}, 0, 3, onlyTheNan))
                .hasMessageContaining("no token");
    }

    /**
     * The cuts sort only the candidates in the bins that hold the kept prefix; every candidate sorted (the rule as
     * written) must give the same token, over rows of distinct logits, of large groups of equal logits, with NaN,
     * -infinity and masks, and rules that cut by each of top-k, top-p and min-p and their combinations.
     */
    @Test
    void cuttingFromTheTopBinsIsSortingEveryCandidate() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(41);
        int checked = 0;
        for (int n : new int[] {1, 2, 9, 300, 20000}) {
            for (int kind = 0; kind < 4; kind++) {
                float[] row = new float[n];
                boolean[] allowed = kind == 3 ? new boolean[n] : null;
                for (int i = 0; i < n; i++) {
                    row[i] = switch (kind) {
                        case 0 -> (float) (3 * rnd.nextGaussian());
                        case 1 -> Math.round(4 * rnd.nextGaussian()) / 2f; // groups of equal logits
                        case 2 -> i % 5 == 0 ? Float.NaN : i % 5 == 1 ? Float.NEGATIVE_INFINITY
                                : (float) (8 * rnd.nextGaussian());
                        default -> (float) rnd.nextGaussian();
                    };
                    if (allowed != null) {
                        allowed[i] = rnd.nextInt(3) > 0 || i == n - 1;
                    }
                }
                if (kind == 2 && n < 3) {
                    continue; // no finite logit
                }
                for (double t : new double[] {0.25, 1, 3}) {
                    for (int k : new int[] {0, 1, 7, 5000}) {
                        for (double p : new double[] {1, 0.95, 0.5, 0.05}) {
                            for (double minP : new double[] {0, 0.01, 0.3}) {
                                TokenDraw d = draw(t, k, p, minP, rnd.nextDouble());
                                if (!d.cuts()) {
                                    continue;
                                }
                                assertThat(d.pick(row, 0, n, allowed)).as("n %d kind %d %s", n, kind, d)
                                        .isEqualTo(sortingEveryCandidate(d, row, n, allowed));
                                checked++;
                            }
                        }
                    }
                }
            }
        }
        assertThat(checked).isGreaterThan(1000);
    }

    /**
     * Min-p alone where every token collected from the floor's bin up passes it (the bin below the floor is empty, so
     * the draw knows the rest fail) and over nearly flat logits (most of the vocabulary kept, its bins sorted one by
     * one and walked in id order): the same tokens as sorting every candidate.
     */
    @Test
    void minPOverSparseTopsAndFlatRowsIsSortingEveryCandidate() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(43);
        float[] sparse = {0f, 10f, -10f, 9.99f, -3f, 9.5f};
        float[] flat = new float[50000];
        for (int i = 0; i < flat.length; i++) {
            flat[i] = (float) (0.3 * rnd.nextGaussian());
        }
        for (float[] row : new float[][] {sparse, flat}) {
            for (double[] rule : new double[][] {{1, 0, 1, 0.5}, {0.7, 0, 1, 0.05}, {0.7, 0, 0.9, 0}, {1, 0, 0.95, 0.05}}) {
                for (int i = 0; i < 20; i++) {
                    TokenDraw d = draw(rule[0], (int) rule[1], rule[2], rule[3], rnd.nextDouble());
                    assertThat(d.pick(row, 0, row.length, null)).as("%d logits, %s", row.length, d)
                            .isEqualTo(sortingEveryCandidate(d, row, row.length, null));
                }
            }
        }
    }

    /** The rule as written: every candidate sorted, the cuts in order, the kept ones walked in id order. */
    private static int sortingEveryCandidate(TokenDraw d, float[] logits, int n, boolean[] allowed) {
        java.util.List<Integer> ids = new java.util.ArrayList<>();
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            if ((allowed == null || allowed[i]) && !Float.isNaN(logits[i]) && logits[i] != Float.NEGATIVE_INFINITY) {
                ids.add(i);
                max = Math.max(max, logits[i]);
            }
        }
        ids.sort((a, b) -> logits[a] != logits[b] ? Float.compare(logits[b], logits[a]) : Integer.compare(a, b));
        double[] w = new double[n];
        double all = 0;
        for (int i = 0; i < n; i++) { // every candidate's weight, summed in id order
            if ((allowed == null || allowed[i]) && !Float.isNaN(logits[i]) && logits[i] != Float.NEGATIVE_INFINITY) {
                w[i] = Math.exp(((double) logits[i] - max) / d.temperature());
                all += w[i];
            }
        }
        int keep = d.topK() > 0 ? Math.min(d.topK(), ids.size()) : ids.size();
        double sum = all;
        if (d.topK() > 0 && d.topK() < ids.size()) {
            sum = 0;
            for (int i = 0; i < keep; i++) {
                sum += w[ids.get(i)];
            }
        }
        if (d.topP() < 1) {
            double acc = 0;
            for (int i = 0; i < keep; i++) {
                acc += w[ids.get(i)];
                if (acc >= d.topP() * sum) {
                    keep = i + 1;
                    break;
                }
            }
        }
        if (d.minP() > 0) {
            int k = 1;
            while (k < keep && w[ids.get(k)] >= d.minP() * w[ids.get(0)]) {
                k++;
            }
            keep = k;
        }
        java.util.List<Integer> kept = new java.util.ArrayList<>(ids.subList(0, keep));
        java.util.Collections.sort(kept);
        double total = 0;
        for (int i : kept) {
            total += w[i];
        }
        double r = d.uniform() * total;
        for (int i : kept) {
            r -= w[i];
            if (r < 0) {
                return i;
            }
        }
        return kept.get(kept.size() - 1);
    }

    /** Weights are exp((logit - top) / temperature) or 0, never a subnormal double, at any temperature. */
    @Test
    void weightsAreNeverSubnormal() {
        for (double t : new double[] {1e-6, 0.01, 1, 100}) {
            TokenDraw d = draw(t, 0, 1, 0, 0.5);
            for (float logit = -1000f; logit <= 0f; logit += 0.37f) {
                double w = d.weight(logit, 0);
                assertThat(w == 0 || w >= Double.MIN_NORMAL).as("temperature %s, logit %s: %s", t, logit, w).isTrue();
                assertThat(w).isCloseTo(Math.exp(logit / t) < Math.exp(-700) ? 0 : Math.exp(logit / t),
                        org.assertj.core.data.Offset.offset(1e-300));
            }
            float[] steep = {0f, -0.5f, -2000f, -1e30f}; // the far ones weigh 0 and are never drawn
            assertThat(draw(t, 0, 1, 0, 0.999).pick(steep, 0, 4, null)).isIn(0, 1);
            assertThat(draw(t, 3, 0.999, 0, 0.999).pick(steep, 0, 4, null)).isIn(0, 1);
        }
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
