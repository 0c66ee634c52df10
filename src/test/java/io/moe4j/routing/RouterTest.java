package io.moe4j.routing;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * Routers on hand-built logits: with H = E and an identity router weight, a token's hidden state IS its logits,
 * so each case states the scores directly and the expected choice follows from the routing rule.
 */
class RouterTest {
    private static float[] identity(int e) {
        float[] w = new float[e * e];
        for (int i = 0; i < e; i++) {
            w[i * e + i] = 1f;
        }
        return w;
    }

    @Test
    void softmaxTopKRenormalizedSumsToOneAndSortsById() {
        RouterSpec spec = RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 4, 2, true);
        Router r = new Router(spec, 4, identity(4), null, null);
        Routing out = r.route(new float[] {0.1f, 3f, -1f, 2f}, 1);
        assertThat(out.ids()).containsExactly(1, 3);
        double a = Math.exp(3);
        double b = Math.exp(2);
        assertThat(out.weights()[0]).isCloseTo((float) (a / (a + b)), within(1e-6f));
        assertThat(out.weights()[0] + out.weights()[1]).isCloseTo(1f, within(1e-6f));
    }

    @Test
    void softmaxTopKWithoutRenormKeepsFullSoftmaxProbabilities() {
        RouterSpec spec = RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 3, 1, false);
        Router r = new Router(spec, 3, identity(3), null, null);
        Routing out = r.route(new float[] {0f, 1f, 0f}, 1);
        double z = 2 + Math.E;
        assertThat(out.ids()).containsExactly(1);
        assertThat(out.weights()[0]).isCloseTo((float) (Math.E / z), within(1e-6f));
    }

    @Test
    void topKThenSoftmaxAddsBiasBeforeChoosing() {
        RouterSpec spec = RouterSpec.simple(RouterKind.TOPK_SOFTMAX, 3, 2, false);
        Router r = new Router(spec, 3, identity(3), new float[] {0f, 0f, 5f}, null);
        Routing out = r.route(new float[] {2f, 1f, 0f}, 1);
        assertThat(out.ids()).containsExactly(0, 2);        // logits with bias: 2, 1, 5
        double a = Math.exp(2);
        double b = Math.exp(5);
        assertThat(out.weights()[0]).isCloseTo((float) (a / (a + b)), within(1e-6f));
    }

    @Test
    void groupedTopKChoosesWithinTheBestGroupsAndWeighsWithoutTheBias() {
        // 4 experts in 2 groups, 1 group kept. Group 0 = {0, 1}, group 1 = {2, 3}.
        RouterSpec spec = new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 4, 2, true, 2, 1, 2.5);
        float[] correction = {0f, 0f, 0f, 0f};
        Router r = new Router(spec, 4, identity(4), null, correction);
        // Expert 3 alone has the highest score, but group 0's two experts sum higher: group 0 wins.
        float[] logits = {1.0f, 1.0f, 3.0f, -3.0f};
        Routing out = r.route(logits, 1);
        assertThat(out.ids()).containsExactly(0, 1);
        assertThat(out.weights()[0]).isCloseTo(1.25f, within(1e-6f)); // renormalized 0.5 × scaling 2.5

        // A correction bias that lifts expert 3 moves group 1 ahead; weights still come from the plain sigmoid.
        Router biased = new Router(spec, 4, identity(4), null, new float[] {0f, 0f, 0f, 2f});
        Routing out2 = biased.route(logits, 1);
        assertThat(out2.ids()).containsExactly(2, 3);
        double s2 = 1 / (1 + Math.exp(-3.0));
        double s3 = 1 / (1 + Math.exp(3.0));
        assertThat(out2.weights()[1]).isCloseTo((float) (2.5 * s3 / (s2 + s3)), within(1e-6f));
    }

    @Test
    void llama4TopOneIsSigmoidAppliedOnInput() {
        RouterSpec spec = RouterSpec.simple(RouterKind.SIGMOID_TOP1_ON_INPUT, 3, 1, false);
        Routing out = new Router(spec, 3, identity(3), null, null).route(new float[] {0.5f, -1f, 0.2f}, 1);
        assertThat(out.weightOnInput()).isTrue();
        assertThat(out.ids()).containsExactly(0);
        assertThat(out.weights()[0]).isCloseTo((float) (1 / (1 + Math.exp(-0.5))), within(1e-6f));
    }

    @Test
    void topKEqualToExpertCountChoosesAll() {
        RouterSpec spec = RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 3, 3, true);
        Routing out = new Router(spec, 3, identity(3), null, null).route(new float[] {3f, 1f, 2f, 0f, 0f, 0f}, 2);
        assertThat(out.ids()).containsExactly(0, 1, 2, 0, 1, 2);
        assertThat(out.weights()[3]).isCloseTo(1f / 3, within(1e-6f));
    }

    @Test
    void noTokensGiveEmptyRouting() {
        RouterSpec spec = RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 3, 2, true);
        Routing out = new Router(spec, 3, identity(3), null, null).route(new float[0], 0);
        assertThat(out.ids()).isEmpty();
    }

    @Test
    void invalidSpecsAreRefused() {
        assertThatThrownBy(() -> RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 4, 5, true)).hasMessageContaining("top-k 5");
        assertThatThrownBy(() -> new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 6, 2, true, 4, 1, 1.0))
                .hasMessageContaining("groups");
    }

    @Test
    void logitsAreTheTokensTimesTheWeightPlusTheBias() {
        float[] bias = {0.5f, -1f, 2f};
        Router r = new Router(RouterSpec.simple(RouterKind.TOPK_SOFTMAX, 3, 2, false), 3, identity(3), bias, null);
        float[] x = {0.25f, 3f, -1f, 7f, 0f, -2.5f};
        double[] logits = r.logits(x, 2);
        assertThat(logits).hasSize(6);
        for (int i = 0; i < logits.length; i++) {
            assertThat(logits[i]).isEqualTo((double) x[i] + bias[i % 3]);
        }
    }

    /** route() is logits() then select(): a backend that computes the logits itself gets the same choices. */
    @Test
    void selectOnTheLogitsIsWhatRouteChooses() {
        SplittableRandom rnd = new SplittableRandom(11);
        int hidden = 24;
        for (RouterSpec spec : new RouterSpec[] {
                RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 16, 4, true),
                RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 16, 4, false),
                new RouterSpec(RouterKind.TOPK_SOFTMAX, 16, 3, true, 1, 1, 1.0),
                new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 16, 4, true, 4, 2, 2.5),
                RouterSpec.simple(RouterKind.SIGMOID_TOP1_ON_INPUT, 16, 1, false)}) {
            Router r = new Router(spec, hidden, random(rnd, 16 * hidden), random(rnd, 16), random(rnd, 16));
            float[] x = random(rnd, 5 * hidden);
            Routing routed = r.route(x, 5);
            Routing selected = r.select(r.logits(x, 5), 5);
            assertThat(selected.ids()).as(spec.kind().toString()).containsExactly(routed.ids());
            assertThat(selected.weights()).as(spec.kind().toString()).containsExactly(routed.weights());
            assertThat(selected.weightOnInput()).isEqualTo(routed.weightOnInput());
        }
    }

    @Test
    void shortInputsAndLogitsAreRefused() {
        Router r = new Router(RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 3, 2, true), 3, identity(3), null, null);
        assertThatThrownBy(() -> r.route(new float[5], 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("x must hold 2 x 3 values, has 5");
        assertThatThrownBy(() -> r.route(new float[3], -1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> r.select(new double[5], 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("logits must hold 2 x 3 values, has 5");
        assertThat(r.route(new float[7], 2).tokens()).as("a longer x routes its first rows").isEqualTo(2);
    }

    private static float[] random(SplittableRandom rnd, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) rnd.nextGaussian();
        }
        return v;
    }
}
