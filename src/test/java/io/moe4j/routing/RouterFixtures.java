package io.moe4j.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.data.Offset.offset;

import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/** What the tests of every backend's router share: random weights, tied routers, and the routing comparison. */
public final class RouterFixtures {
    private RouterFixtures() {
    }

    /**
     * The families' router shapes and odd ones (H not a multiple of 4, E not of 64, 512 experts): arguments (name,
     * spec, hidden, with a score bias, with DeepSeek's correction bias), for both backends' router tests.
     */
    public static Stream<Arguments> routerShapes() {
        return Stream.of(
                Arguments.of("gpt-oss", new RouterSpec(RouterKind.TOPK_SOFTMAX, 32, 4, true, 1, 1, 1.0), 2880, true,
                        false),
                Arguments.of("qwen3", RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 128, 8, true), 2048, false, false),
                Arguments.of("mixtral", RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 8, 2, true), 4096, false, false),
                Arguments.of("no renormalization", RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 40, 6, false), 1001,
                        false, false),
                Arguments.of("deepseek", new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 256, 8, true, 8, 4, 2.5),
                        1024, false, true),
                Arguments.of("grouped, no renormalization",
                        new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 64, 6, false, 4, 2, 1.5), 515, true, true),
                Arguments.of("sigmoid, one group", new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 20, 3, true, 1, 1,
                        1.0), 96, false, false),
                Arguments.of("llama-4", RouterSpec.simple(RouterKind.SIGMOID_TOP1_ON_INPUT, 16, 1, false), 5120, false,
                        false),
                Arguments.of("512 experts, top-32", RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 512, 32, true), 256,
                        false, false));
    }

    public static float[] gaussian(SplittableRandom rnd, int n, double scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * scale);
        }
        return v;
    }

    /** One router of each kind over 16 experts, DeepSeek's in 4 groups of 4, for {@link #tiedWeights}. */
    public static List<RouterSpec> tieSpecs() {
        return List.of(
                RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 16, 2, true),
                new RouterSpec(RouterKind.TOPK_SOFTMAX, 16, 2, true, 1, 1, 1.0),
                RouterSpec.simple(RouterKind.SIGMOID_TOP1_ON_INPUT, 16, 1, false),
                new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 16, 2, true, 4, 1, 1.0));
    }

    /**
     * Router weights [16, hidden] with ties: experts 5, 9 and 13 share one large row (three tied for two places);
     * groups 1 (experts 4..7, with 5 and a second large row, 6) and 3 (12..15) are equal and the best.
     */
    public static float[] tiedWeights(SplittableRandom rnd, int hidden) {
        float[] w = gaussian(rnd, 16 * hidden, 0.05);
        for (int c = 0; c < hidden; c++) {
            float big = 1f + c % 3;
            for (int e : new int[] {5, 9}) {
                w[e * hidden + c] = big;
            }
            w[6 * hidden + c] = 0.5f;
            for (int j = 0; j < 4; j++) {
                w[(12 + j) * hidden + c] = w[(4 + j) * hidden + c];
            }
        }
        return w;
    }

    /**
     * The same experts in the same order, and weights within 2e-7: float64 sums in another order (and a device's
     * exp) differ by a few ulps of a double, mostly none of a float.
     */
    public static void assertSameRouting(Routing got, Routing want, String what) {
        assertThat(got.tokens()).isEqualTo(want.tokens());
        assertThat(got.topK()).isEqualTo(want.topK());
        assertThat(got.weightOnInput()).isEqualTo(want.weightOnInput());
        assertThat(got.ids()).as("expert ids, %s", what).containsExactly(want.ids());
        for (int i = 0; i < want.weights().length; i++) {
            assertThat((double) got.weights()[i]).as("weight %d, %s", i, what)
                    .isCloseTo(want.weights()[i], offset(2e-7 * Math.abs(want.weights()[i]) + 1e-30));
        }
    }
}
