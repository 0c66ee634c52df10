package io.moe4j.backend.cuda;

import static io.moe4j.routing.RouterFixtures.assertSameRouting;
import static io.moe4j.routing.RouterFixtures.gaussian;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.config.ModelConfig;
import io.moe4j.layer.MoeLayer;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.routing.Router;
import io.moe4j.routing.RouterFixtures;
import io.moe4j.routing.RouterSpec;
import io.moe4j.routing.Routing;
import io.moe4j.safetensors.Checkpoint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * MoE layers routed on the device ({@link ModelOps#routeAndRunExperts}): the selection against the host's
 * {@link Router#select} on the same logits (random, and rounded to a coarse grid so that many are tied), and the
 * experts on the plan built on the device against the same experts on the host's plan.
 */
class DeviceRoutingTest {

    @BeforeEach
    void requireGpu() {
        CudaProbe probe = CudaRuntime.probe();
        assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    static Stream<Arguments> routers() {
        return RouterFixtures.routerShapes();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("routers")
    void theDeviceSelectionIsTheHostRule(String name, RouterSpec spec, int hidden, boolean bias, boolean correction) {
        SplittableRandom rnd = new SplittableRandom(name.hashCode());
        int e = spec.numExperts();
        float[] corr = correction ? gaussian(rnd, e, 0.1) : null;
        Router host = new Router(spec, hidden, new float[e * hidden], null, corr);
        try (ModelOps ops = ModelOps.open(); DeviceRoutes routes = ops.newRoutes();
                DeviceBuffer dcorr = corr == null ? null : ops.upload(corr)) {
            for (int tokens : new int[] {1, 3, 64, 130}) {
                for (boolean tied : new boolean[] {false, true}) {
                    double[] logits = new double[tokens * e];
                    for (int i = 0; i < logits.length; i++) {
                        double v = rnd.nextGaussian() * 2;
                        // a grid of 0.5: with 8+ experts most tokens have equal logits among their best
                        logits[i] = tied ? Math.rint(v * 2) / 2 : v;
                    }
                    try (DeviceBuffer d = upload(ops, logits)) {
                        ops.selectExperts(d.pointer(), spec, dcorr == null ? 0L : dcorr.pointer(), tokens, routes);
                        Routing got = ops.readChoices(routes, spec, tokens);
                        assertSameRouting(got, host.select(logits, tokens),
                                name + ", " + tokens + " tokens" + (tied ? ", tied logits" : ""));
                    }
                }
            }
        }
    }

    /**
     * The gpt-oss case's MXFP4 experts (GEMM1 reads the tokens as they are) and Mixtral's FP8 ones (per-tensor
     * activation scales: GEMM1 reads prepared rows, on the CUDA-core GEMM), routed on the device and on the host,
     * from the same logits (so the same experts: the selection is checked above), through each path the device plan
     * takes: one pair a GEMV block, the GEMV's pieces, the tile GEMMs (padded with empty tiles).
     */
    @ParameterizedTest
    @ValueSource(strings = {"m_gptoss_mxfp4", "m_mixtral_ct_fp8_tensor"})
    void expertsOnTheDevicePlanMatchTheHostPlan(String model) {
        SplittableRandom rnd = new SplittableRandom(11);
        try (CaseLayer c = CaseLayer.open(model)) {
            MoeLayer layer = c.layer();
            ModelOps ops = c.ops();
            DeviceRoutes routes = c.routes();
            Router router = layer.router();
            RouterSpec spec = router.spec();
            assertThat(ModelOps.routesOnDevice(layer.experts(), spec)).isTrue();
            int h = router.hidden();
            for (int tokens : new int[] {1, 2, 7, 24, 200, 1100}) {
                float[] x = gaussian(rnd, tokens * h, 1.0);
                double[] logits = router.logits(x, tokens);
                try (DeviceBuffer dx = ops.upload(x); DeviceBuffer dl = upload(ops, logits);
                        DeviceBuffer hostPlanned = ops.allocate(4L * tokens * h);
                        DeviceBuffer devicePlanned = ops.allocate(4L * tokens * h)) {
                    ops.experts(layer.experts(), dx, tokens, router.select(logits, tokens), hostPlanned);
                    ops.routeAndRunExperts(layer.experts(), spec, dl.pointer(), 0L, dx, tokens, devicePlanned, routes);
                    // gpt-oss (8 experts, top-4): from 24 tokens (12 pairs an expert) the device plan takes the tile
                    // GEMMs, below it the GEMV (pieces from 2 tokens); the FP8 experts never take tiles.
                    // The FP8 ones (8 experts, top-2) take batches of several pairs an expert from 8 tokens. 1100
                    // tokens are more pairs than a decode step's (the plan kernel's wider block).
                    CudaExperts.DevicePlan plan = ((CudaExperts) layer.experts())
                            .devicePlan(tokens, spec.topK(), spec.weightOnInput(), routes);
                    boolean gptOss = model.equals("m_gptoss_mxfp4");
                    assertThat(plan.tiles()).as("%s, %d tokens: tile GEMMs", model, tokens)
                            .isEqualTo(gptOss && tokens >= 24);
                    assertThat(plan.batchSize() > 1).as("%s, %d tokens: batches of pairs", model, tokens)
                            .isEqualTo(!gptOss && tokens >= 8);
                    float[] want = ops.readFloats(hostPlanned, 0, tokens * h);
                    float[] got = ops.readFloats(devicePlanned, 0, tokens * h);
                    // One token: the host plan takes the same kernels (one pair a GEMV block), so the same sums.
                    // More: the host plan may take the GEMV's pieces or the tile GEMMs, whose bf16/f16 inputs and
                    // sums differ in rounding (gpt-oss, 7 tokens: 3.4e-4), far inside the cases' 0.02.
                    assertThat(io.moe4j.testing.Norms.relL2(got, want)).as("%s, %d tokens", model, tokens)
                            .isLessThanOrEqualTo(tokens == 1 ? 1e-6 : 2e-3);
                }
            }
        }
    }

    /**
     * A one-token pass's plan as the selection writes it (no plan kernel) against moe_route_plan's from the same
     * choices: the same bytes of pairs, batches and routes, and the same output bit for bit; gpt-oss's GEMM1 reads x by
     * token, Mixtral's FP8 one the prepared rows by pair.
     */
    @ParameterizedTest
    @ValueSource(strings = {"m_gptoss_mxfp4", "m_mixtral_ct_fp8_tensor"})
    void oneTokensSelectionWritesThePlanThePlanKernelMakes(String model) {
        SplittableRandom rnd = new SplittableRandom(5);
        try (CaseLayer c = CaseLayer.open(model)) {
            MoeLayer layer = c.layer();
            ModelOps ops = c.ops();
            DeviceRoutes routes = c.routes();
            Router router = layer.router();
            RouterSpec spec = router.spec();
            CudaExperts cuda = (CudaExperts) layer.experts();
            int h = router.hidden();
            for (int round = 0; round < 8; round++) {
                float[] x = gaussian(rnd, h, 1.0);
                try (DeviceBuffer dx = ops.upload(x); DeviceBuffer dl = upload(ops, router.logits(x, 1));
                        DeviceBuffer out = ops.allocate(4L * h)) {
                    float[][] got = new float[2][];
                    int[][] meta = new int[2][];
                    int[][] routeWords = new int[2][];
                    for (int fused = 0; fused < 2; fused++) {
                        ops.routeAndRunExperts(layer.experts(), spec, dl.pointer(), 0L, dx, 1, out, routes,
                                fused == 1);
                        CudaExperts.DevicePlan plan = cuda.devicePlan(1, spec.topK(), spec.weightOnInput(), routes);
                        got[fused] = ops.readFloats(out, 0, h);
                        meta[fused] = bits(ops.readFloats(plan.meta(), 0,
                                (int) (6 * plan.span() / 4) + 4 * plan.pairs()));
                        routeWords[fused] = bits(ops.readFloats(plan.routes(), 0, 4 * plan.pairs()));
                    }
                    assertThat(meta[1]).as("%s round %d: pairs and batches", model, round).isEqualTo(meta[0]);
                    assertThat(routeWords[1]).as("%s round %d: routes", model, round).isEqualTo(routeWords[0]);
                    assertThat(got[1]).as("%s round %d: output", model, round).isEqualTo(got[0]);
                }
            }
        }
    }

    /** Layer 0 of a whole-model conformance case on the cuda backend, with the device ops and routes to run it. */
    private record CaseLayer(Checkpoint checkpoint, MoeLayer layer, ModelOps ops, DeviceRoutes routes)
            implements AutoCloseable {
        static CaseLayer open(String model) {
            Path dir = Path.of(System.getProperty("moe4j.shared", "../shared")).resolve("conformance-models")
                    .resolve(model);
            Checkpoint checkpoint = Checkpoint.open(dir);
            MoeLayer layer = null;
            ModelOps ops = null;
            try {
                layer = MoeLayer.load(checkpoint, ModelConfig.load(dir), 0,
                        MoeLayerOptions.defaults().withBackend(CudaBackend.NAME));
                ops = ModelOps.open();
                return new CaseLayer(checkpoint, layer, ops, ops.newRoutes());
            } catch (RuntimeException e) {
                if (ops != null) {
                    ops.close();
                }
                if (layer != null) {
                    layer.close();
                }
                checkpoint.close();
                throw e;
            }
        }

        @Override
        public void close() {
            try (checkpoint; layer; ops; routes) {
                // closed in reverse order: routes, ops, layer, checkpoint
            }
        }
    }

    private static int[] bits(float[] words) {
        int[] out = new int[words.length];
        for (int i = 0; i < words.length; i++) {
            out[i] = Float.floatToRawIntBits(words[i]);
        }
        return out;
    }

    private static DeviceBuffer upload(ModelOps ops, double[] values) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(ValueLayout.JAVA_DOUBLE, values.length);
            MemorySegment.copy(values, 0, s, ValueLayout.JAVA_DOUBLE, 0, values.length);
            return ops.upload(s);
        }
    }
}
