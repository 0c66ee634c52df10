package io.moe4j.backend.cuda;

import static io.moe4j.routing.RouterFixtures.assertSameRouting;
import static io.moe4j.routing.RouterFixtures.gaussian;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.routing.Router;
import io.moe4j.routing.RouterFixtures;
import io.moe4j.routing.RouterKind;
import io.moe4j.routing.RouterSpec;
import io.moe4j.routing.Routing;
import io.moe4j.routing.TokenRouter;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The device router against the host {@link Router} it copies: same experts, same weights, for every kind. */
class CudaRouterTest {

    @BeforeEach
    void requireGpu() {
        CudaProbe probe = CudaRuntime.probe();
        assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    /** Router shapes of the families, plus odd ones (H not a multiple of 4, E not of 64), at decode and prefill. */
    static Stream<Arguments> routers() {
        return RouterFixtures.routerShapes();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("routers")
    void matchesTheHostRouter(String name, RouterSpec spec, int hidden, boolean bias, boolean correction) {
        SplittableRandom rnd = new SplittableRandom(name.hashCode());
        Router host = new Router(spec, hidden, gaussian(rnd, spec.numExperts() * hidden, 0.05),
                bias ? gaussian(rnd, spec.numExperts(), 0.5) : null,
                correction ? gaussian(rnd, spec.numExperts(), 0.1) : null);
        // decode batches with x and the choices through mapped pinned memory (default) and through copies
        for (boolean mapped : new boolean[] {true, false}) {
            CudaBackend backend = new CudaBackend(CudaTuning.defaults().withMappedTransfers(mapped));
            try (TokenRouter device = backend.prepareRouter(host)) {
                assertThat(device).isInstanceOf(CudaRouter.class);
                assertThat(device.where()).startsWith("cuda");
                for (int tokens : new int[] {1, 3, 16, 17, 130}) { // both logits kernels, partial tiles
                    float[] x = gaussian(rnd, tokens * hidden, 1.0);
                    assertSameRouting(device.route(x, tokens), host.route(x, tokens),
                            name + ", " + tokens + " tokens" + (mapped ? "" : ", copies"));
                }
            }
        }
    }

    /** Equal logits (duplicated router rows) go to the lower expert, as on the host; so do equal DeepSeek groups. */
    @Test
    void tiesGoToTheLowerExpertAndGroup() {
        int hidden = 64;
        SplittableRandom rnd = new SplittableRandom(7);
        for (RouterSpec spec : RouterFixtures.tieSpecs()) {
            float[] w = RouterFixtures.tiedWeights(rnd, hidden);
            Router host = new Router(spec, hidden, w, null, null);
            float[] x = new float[2 * hidden];
            java.util.Arrays.fill(x, 1f);
            for (int c = 0; c < hidden; c++) {
                x[hidden + c] = (float) rnd.nextDouble(0.5, 1.5);
            }
            try (TokenRouter device = new CudaBackend().prepareRouter(host)) {
                Routing want = host.route(x, 2);
                assertThat(want.ids()).as("the host picks the lower of equal experts").contains(5);
                assertSameRouting(device.route(x, 2), want, spec.kind().toString());
            }
        }
    }

    @Test
    void emptyBatchesAndShortInputs() {
        RouterSpec spec = RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 8, 2, true);
        Router host = new Router(spec, 32, gaussian(new SplittableRandom(1), 8 * 32, 0.1), null, null);
        try (TokenRouter device = new CudaBackend().prepareRouter(host)) {
            Routing none = device.route(new float[0], 0);
            assertThat(none.tokens()).isZero();
            assertThat(none.ids()).isEmpty();
            assertThatThrownBy(() -> device.route(new float[40], 2))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("2 x 32");
        }
    }

    @Test
    void routersBeyondTheKernelsLimitsStayOnTheHost() {
        RouterSpec wide = RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 1024, 8, true);
        assertThat(CudaRouter.unsupportedReason(wide)).contains("not 1024");
        Router host = new Router(wide, 4, new float[1024 * 4], null, null);
        assertThat(new CudaBackend().prepareRouter(host)).isSameAs(host);
    }


}
