package io.moe4j.backend.cpu;

import io.moe4j.routing.Router;
import io.moe4j.routing.RouterFixtures;
import io.moe4j.routing.RouterKind;
import io.moe4j.routing.RouterSpec;
import io.moe4j.routing.Routing;
import io.moe4j.routing.TokenRouter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static io.moe4j.routing.RouterFixtures.assertSameRouting;
import static io.moe4j.routing.RouterFixtures.gaussian;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.offset;

/**
 * The cpu backend's router against the host {@link Router} it copies, on both kernel sets: the same experts, the
 * weights to float rounding, the logits to float64 rounding of another summation order, every router kind.
 */
class CpuRouterTest {
    private static final int[] TOKENS = {0, 1, 3, 4, 5, 17, 130}; // lone tokens, whole 4-token tiles, tails

    @AfterEach
    void clearProperty() {
        System.clearProperty(KernelSelection.PROPERTY);
    }

    /** Router shapes of the families, plus odd ones: H not a multiple of 4 or under 4, E not a multiple of 4. */
    static Stream<Arguments> routers() {
        Stream<Arguments> shapes = Stream.concat(RouterFixtures.routerShapes(), Stream.of(
                Arguments.of("top-k softmax, 7 experts", new RouterSpec(RouterKind.TOPK_SOFTMAX, 7, 3, false, 1, 1,
                        1.0), 1001, true, false),
                Arguments.of("H 3", RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 6, 2, true), 3, true, false)));
        return shapes.flatMap(a -> KernelsUnderTest.names().stream().map(k -> Arguments.of(k, a.get()[0], a.get()[1],
                a.get()[2], a.get()[3], a.get()[4])));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("routers")
    void matchesTheHostRouter(String kernels, String name, RouterSpec spec, int hidden, boolean bias,
                              boolean correction) {
        SplittableRandom rnd = new SplittableRandom(name.hashCode());
        Router host = new Router(spec, hidden, gaussian(rnd, spec.numExperts() * hidden, 0.05),
                bias ? gaussian(rnd, spec.numExperts(), 0.5) : null,
                correction ? gaussian(rnd, spec.numExperts(), 0.1) : null);
        CpuRouter cpu = router(kernels, host);
        for (int tokens : TOKENS) {
            float[] x = gaussian(rnd, tokens * hidden, 1.0);
            String what = kernels + ", " + name + ", " + tokens + " tokens";
            assertCloseLogits(cpu.logits(x, tokens), host.logits(x, tokens), host, x, what);
            assertSameRouting(cpu.route(x, tokens), host.route(x, tokens), what);
        }
    }

    /** The lane order is the same in both kernel sets and for any batch: bit-identical logits. */
    @Test
    void logitsAreTheSameForEitherKernelsAndAnyBatch() {
        SplittableRandom rnd = new SplittableRandom(3);
        for (int hidden : new int[] {1001, 2048}) {
            RouterSpec spec = new RouterSpec(RouterKind.TOPK_SOFTMAX, 13, 4, true, 1, 1, 1.0);
            Router host = new Router(spec, hidden, gaussian(rnd, 13 * hidden, 0.05), gaussian(rnd, 13, 0.5), null);
            float[] x = gaussian(rnd, 9 * hidden, 1.0);
            double[] scalar = router("scalar", host).logits(x, 9);
            for (String kernels : KernelsUnderTest.names()) {
                CpuRouter cpu = router(kernels, host);
                assertThat(cpu.logits(x, 9)).as(kernels + " against scalar").containsExactly(scalar);
                for (int t : new int[] {0, 4, 8}) {
                    double[] alone = cpu.logits(Arrays.copyOfRange(x, t * hidden, (t + 1) * hidden), 1);
                    assertThat(alone).as("%s, token %d alone", kernels, t)
                            .containsExactly(Arrays.copyOfRange(scalar, t * 13, (t + 1) * 13));
                }
            }
        }
    }

    /** Equal logits (duplicated router rows) go to the lower expert, as on the host; so do equal DeepSeek groups. */
    @Test
    void tiesGoToTheLowerExpertAndGroup() {
        int hidden = 66;
        SplittableRandom rnd = new SplittableRandom(7);
        for (RouterSpec spec : RouterFixtures.tieSpecs()) {
            float[] w = RouterFixtures.tiedWeights(rnd, hidden);
            Router host = new Router(spec, hidden, w, null, null);
            float[] x = new float[5 * hidden]; // 5 tokens: one 4-token tile and a lone token
            Arrays.fill(x, 1f);
            for (int i = hidden; i < x.length; i++) {
                x[i] = (float) rnd.nextDouble(0.5, 1.5);
            }
            Routing want = host.route(x, 5);
            assertThat(want.ids()).as("the host picks the lower of equal experts").contains(5);
            for (String kernels : KernelsUnderTest.names()) {
                assertSameRouting(router(kernels, host).route(x, 5), want, kernels + ", " + spec.kind());
            }
        }
    }

    @Test
    void emptyBatchesAndShortInputsFailAsOnTheHost() {
        RouterSpec spec = RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 8, 2, true);
        Router host = new Router(spec, 32, gaussian(new SplittableRandom(1), 8 * 32, 0.1), null, null);
        for (String kernels : KernelsUnderTest.names()) {
            CpuRouter cpu = router(kernels, host);
            Routing none = cpu.route(new float[0], 0);
            assertThat(none.tokens()).isZero();
            assertThat(none.ids()).isEmpty();
            for (int[] call : new int[][] {{40, 2}, {0, 1}, {64, -1}}) {
                Throwable want = catchThrowable(() -> host.route(new float[call[0]], call[1]));
                Throwable got = catchThrowable(() -> cpu.route(new float[call[0]], call[1]));
                assertThat(want).isInstanceOf(IllegalArgumentException.class);
                assertThat(got).as("%s, %d values for %d tokens", kernels, call[0], call[1])
                        .isInstanceOf(want.getClass()).hasMessage(want.getMessage());
            }
        }
    }

    @Test
    void theBackendRoutesOnTheKernelsItSelects() {
        Router host = new Router(RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 4, 1, true), 8, new float[32], null, null);
        boolean vector = KernelsUnderTest.names().contains("vector");
        try (TokenRouter r = new CpuBackend().prepareRouter(host)) {
            assertThat(r).isInstanceOf(CpuRouter.class);
            assertThat(((CpuRouter) r).kernels()).isEqualTo(vector ? "vector" : "scalar");
            assertThat(r.where()).isEqualTo(vector ? "cpu (Vector API, float64 logits)"
                    : "cpu (scalar Java, float64 logits)");
        }
        System.setProperty(KernelSelection.PROPERTY, "true");
        try (TokenRouter r = new CpuBackend().prepareRouter(host)) {
            assertThat(((CpuRouter) r).kernels()).isEqualTo("scalar");
            assertThat(r.where()).isEqualTo("cpu (scalar Java, float64 logits)");
        }
    }

    private static CpuRouter router(String kernels, Router host) {
        return new CpuRouter(host, KernelsUnderTest.get(kernels).routerLogits(host));
    }

    /**
     * Within 1e-12 of the magnitude of the sum's terms, Σ|w·x| + |bias|: the two orders round differently, and a
     * logit that cancels to near zero has no relative accuracy in either.
     */
    private static void assertCloseLogits(double[] got, double[] want, Router host, float[] x, String what) {
        assertThat(got).as("logits, %s", what).hasSameSizeAs(want);
        int e = host.spec().numExperts();
        int h = host.hidden();
        float[] w = host.weight();
        float[] bias = host.bias();
        for (int i = 0; i < want.length; i++) {
            int t = i / e;
            int expert = i % e;
            double scale = bias == null ? 0 : Math.abs(bias[expert]);
            for (int c = 0; c < h; c++) {
                scale += Math.abs((double) w[expert * h + c] * x[t * h + c]);
            }
            assertThat(got[i]).as("logit %d, %s", i, what).isCloseTo(want[i], offset(1e-12 * scale + 1e-300));
        }
    }


}
