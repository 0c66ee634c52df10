package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.RandomWeights.Layout;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.format.ElementFormat;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A quantized dense linear (an attention projection of a device model) gives a token the same bits alone (a decode
 * step: the row stage, then moe_gemv_units) as in a batch of several (the row stage, then moe_gemm_units), for every
 * input rule and with the weights' columns reordered (act-order); and a norm, or the attention ahead of it, that
 * applies the linear's input rule itself gives the bits of the separate row stage.
 */
class DeviceLinearTest {

    @BeforeEach
    void requireGpu() {
        CudaProbe probe = CudaRuntime.probe();
        assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    static Stream<Arguments> linears() {
        Layout int4 = Layout.scaled("int4_g32", WeightFormat.INT4_GROUP, CodeType.INT4, ScaleType.F32, 1, 32);
        return Stream.of(
                Arguments.of(Layout.scaled("fp8_block", WeightFormat.FP8_BLOCK, CodeType.FP8_E4M3, ScaleType.F32, 128,
                        128), new ActivationQuant.Fp8Group(128)),
                Arguments.of(Layout.scaled("fp8_channel", WeightFormat.FP8_CHANNEL, CodeType.FP8_E4M3, ScaleType.F32, 1,
                        0), new ActivationQuant.Fp8PerToken()),
                Arguments.of(Layout.scaled("int8_group64", WeightFormat.INT8_GROUP, CodeType.INT8, ScaleType.F32, 1, 64)
                        .withZeros(), new ActivationQuant.Fp8Static(new float[] {0.03f})),
                Arguments.of(int4, new ActivationQuant.Int8PerToken()),
                Arguments.of(int4, new ActivationQuant.Int8Static(new float[] {0.02f}, new int[] {3})),
                Arguments.of(Layout.scaled("nvfp4", WeightFormat.NVFP4, CodeType.FP4_E2M1, ScaleType.E4M3, 1, 16),
                        new ActivationQuant.Nvfp4(new float[] {448f * 6 / 3})),
                Arguments.of(Layout.scaled("mxfp6_e2m3", WeightFormat.MXFP6_E2M3, CodeType.FP6_E2M3, ScaleType.E8M0, 1,
                        32), new ActivationQuant.Mx(ElementFormat.E2M3)),
                Arguments.of(int4.withActOrder(), new ActivationQuant.Fp8PerToken()),
                Arguments.of(Layout.dense(WeightFormat.BF16, CodeType.BF16), new ActivationQuant.Mx(ElementFormat.E2M1)));
    }

    /** A random one-matrix linear of {@code layout} [out, in] whose input goes through {@code input}. */
    private static LinearWeights weights(Arena arena, SplittableRandom rnd, Layout layout, ActivationQuant input,
            int out, int in) {
        return new LinearWeights(new QuantScheme(layout.name(), layout.format(), ActivationFormat.NONE,
                layout.actOrder()), RandomWeights.matrix(arena, rnd, layout, 1, out, in, 0), input);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("linears")
    void aTokenAloneGetsItsBitsInABatch(Layout layout, ActivationQuant input) {
        int in = 384;
        int out = 200;
        int tokens = 5;
        SplittableRandom rnd = new SplittableRandom(layout.name().hashCode() * 31 + input.getClass().hashCode());
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
            LinearWeights w = weights(arena, rnd, layout, input, out, in);
            float[] bias = RandomWeights.gaussian(rnd, out, 0.1);
            float[] x = RandomWeights.gaussian(rnd, tokens * in, 1.0);
            try (DeviceLinear linear = DeviceLinear.upload(ops, "test_proj", w, bias);
                    DeviceBuffer dx = ops.upload(x); DeviceBuffer batch = ops.allocate(4L * tokens * out);
                    DeviceBuffer single = ops.allocate(4L * tokens * out);
                    DeviceBuffer rows = ops.allocate(Math.max(4, linear.inputScratchBytes(tokens)))) {
                KernelCache kernels = CudaEngine.forDevice(0).kernels();
                long before = kernels.requests("moe_gemv_units");
                ops.linear(linear, dx.pointer(), batch.pointer(), out, tokens, false, rows.pointer(),
                        linear.inputScratchBytes(tokens), 0L, 0L);
                long afterBatch = kernels.requests("moe_gemv_units");
                for (int t = 0; t < tokens; t++) {
                    ops.linear(linear, dx.pointer() + 4L * t * in, single.pointer() + 4L * t * out, out, 1, false,
                            rows.pointer(), linear.inputScratchBytes(1), 0L, 0L);
                }
                // the bits alone would also match if one token took the GEMM: each dispatch asks for its kernel
                assertThat(afterBatch - before).as("moe_gemv_units asked for by the batch").isZero();
                assertThat(kernels.requests("moe_gemv_units") - afterBatch).as("moe_gemv_units asked for by one token")
                        .isEqualTo(tokens);
                float[] got = ops.readFloats(single, 0, tokens * out);
                float[] want = ops.readFloats(batch, 0, tokens * out);
                assertThat(got).as("%s with %s input", layout, input).doesNotContain(Float.NaN).containsExactly(want);
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("linears")
    void aNormThatAppliesTheInputRuleGivesTheInputStagesBits(Layout layout, ActivationQuant input) {
        // model_rms_norm_qdq (the norm with the linear's input rule, then the linear with no input stage) against
        // model_rms_norm, moe_prepare_rows and the linear: the same residual, the same prepared rows, the same
        // output, bit for bit, for one row (a decode step: the block of up to 1024 threads) and for several.
        int in = 384;
        int out = 200;
        SplittableRandom rnd = new SplittableRandom(layout.name().hashCode() * 17 + input.getClass().hashCode());
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
            LinearWeights w = weights(arena, rnd, layout, input, out, in);
            try (DeviceLinear linear = DeviceLinear.upload(ops, "test_proj", w, null)) {
                if (!linear.normPreparesInput(in)) {
                    assertThat(layout.actOrder()).as("only act-order (a column order) is left to the input stage")
                            .isTrue();
                    return;
                }
                for (int tokens : new int[] {1, 5}) {
                    float[] h = RandomWeights.gaussian(rnd, tokens * in, 1.0);
                    try (DeviceBuffer hA = ops.upload(h); DeviceBuffer hB = ops.upload(h);
                            DeviceBuffer add = ops.upload(RandomWeights.gaussian(rnd, tokens * in, 0.5));
                            DeviceBuffer add2 = ops.upload(RandomWeights.gaussian(rnd, tokens * in, 0.5));
                            DeviceBuffer weight = ops.upload(RandomWeights.gaussian(rnd, in, 1.0));
                            DeviceBuffer xnA = ops.allocate(4L * tokens * in);
                            DeviceBuffer xnB = ops.allocate(4L * tokens * in);
                            DeviceBuffer rows = ops.allocate(linear.inputScratchBytes(tokens));
                            DeviceBuffer yA = ops.allocate(4L * tokens * out);
                            DeviceBuffer yB = ops.allocate(4L * tokens * out)) {
                        ops.rmsNorm(hA.pointer(), add.pointer(), add2.pointer(), weight.pointer(), xnA.pointer(),
                                tokens, in, 1e-5f);
                        ops.linear(linear, xnA.pointer(), yA.pointer(), out, tokens, false, rows.pointer(),
                                linear.inputScratchBytes(tokens), 0L, 0L);
                        ops.rmsNormForLinear(hB.pointer(), add.pointer(), add2.pointer(), weight.pointer(),
                                xnB.pointer(), tokens, in, 1e-5f, linear);
                        ops.linearOfPrepared(linear, xnB.pointer(), yB.pointer(), out, tokens, false, 0L, 0L);
                        String what = layout + " with " + input + ", " + tokens + " rows";
                        assertThat(ops.readFloats(hB, 0, tokens * in)).as("residual, " + what)
                                .containsExactly(ops.readFloats(hA, 0, tokens * in));
                        assertThat(ops.readFloats(xnB, 0, tokens * in)).as("prepared rows, " + what)
                                .containsExactly(ops.readFloats(rows, 0, tokens * in));
                        assertThat(ops.readFloats(yB, 0, tokens * out)).as("output, " + what)
                                .doesNotContain(Float.NaN).containsExactly(ops.readFloats(yA, 0, tokens * out));
                    }
                }
            }
        }
    }

    /** An attention kernel writing [tokens, heads · width] at {@code out}, with {@code next}'s input rule or none. */
    private interface Attend {
        boolean into(long out, DeviceLinear next);
    }

    /**
     * {@code attend} without a rule, then the input stage and the linear, against {@code attend} with the linear's
     * rule, then the linear with no stage: the same prepared rows and output bit for bit where the kernel applies the
     * rule (which it must exactly where {@code expected}), the same attention where it does not.
     */
    private static void assertPreparesAsTheStage(ModelOps ops, DeviceLinear linear, int tokens, int out,
                                                 boolean expected, String what, Attend attend) {
        int in = linear.inFeatures();
        try (DeviceBuffer attA = ops.allocate(4L * tokens * in); DeviceBuffer attB = ops.allocate(4L * tokens * in);
                DeviceBuffer rows = ops.allocate(Math.max(4, linear.inputScratchBytes(tokens)));
                DeviceBuffer yA = ops.allocate(4L * tokens * out); DeviceBuffer yB = ops.allocate(4L * tokens * out)) {
            assertThat(attend.into(attA.pointer(), null)).as("without a rule, " + what).isFalse();
            ops.linear(linear, attA.pointer(), yA.pointer(), out, tokens, false, rows.pointer(), rows.byteSize(), 0L,
                    0L);
            boolean applied = attend.into(attB.pointer(), linear);
            assertThat(applied).as(what).isEqualTo(expected);
            if (!applied) {
                assertThat(ops.readFloats(attB, 0, tokens * in)).as("attention, " + what)
                        .containsExactly(ops.readFloats(attA, 0, tokens * in));
                return;
            }
            float[] want = ops.readFloats(rows, 0, tokens * in);
            assertThat(want).as("the rule changed the attention, " + what)
                    .isNotEqualTo(ops.readFloats(attA, 0, tokens * in));
            assertThat(ops.readFloats(attB, 0, tokens * in)).as("prepared rows, " + what).containsExactly(want);
            ops.linearOfPrepared(linear, attB.pointer(), yB.pointer(), out, tokens, false, 0L, 0L);
            assertThat(ops.readFloats(yB, 0, tokens * out)).as("output, " + what).doesNotContain(Float.NaN)
                    .containsExactly(ops.readFloats(yA, 0, tokens * out));
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("linears")
    void anAttentionThatAppliesTheInputRuleGivesTheInputStagesBits(Layout layout, ActivationQuant input) {
        // model_attend_rows with o's input rule applied to each head as it is written, then the linear with no input
        // stage, against the attention, moe_prepare_rows and the linear, for a span in one piece and one in many
        // (merged by the last block), one row and three. Rules whose groups do not lie within a head (per-token
        // maxima) and column orders are refused.
        int headDim = 128;
        int heads = 3;
        int in = heads * headDim;
        int out = 200;
        int positions = 700;
        SplittableRandom rnd = new SplittableRandom(layout.name().hashCode() * 13 + input.getClass().hashCode());
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
            LinearWeights w = weights(arena, rnd, layout, input, out, in);
            try (DeviceLinear linear = DeviceLinear.upload(ops, "test_proj", w, null)) {
                boolean local = input instanceof ActivationQuant.Fp8Group || input instanceof ActivationQuant.Mx
                        || input instanceof ActivationQuant.Nvfp4 || input instanceof ActivationQuant.Fp8Static
                        || input instanceof ActivationQuant.Int8Static;
                boolean expected = local && !layout.actOrder();
                assertThat(linear.headsPrepareInput(headDim)).as("%s with %s", layout, input).isEqualTo(expected);
                float[] cache = RandomWeights.gaussian(rnd, positions * 2 * headDim, 1.0);
                float scale = (float) (1 / Math.sqrt(headDim));
                for (long[] at : new long[][] {{40}, {positions - 1}, {3, 400, positions - 1}}) {
                    int tokens = at.length;
                    int stride = in + 2 * headDim; // q|k|v rows, one kv head
                    float[] q = RandomWeights.gaussian(rnd, tokens * stride, 1.0);
                    try (DeviceBuffer dCache = ops.upload(cache); DeviceBuffer dq = ops.upload(q);
                            DeviceBuffer dPositions = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG, at));
                            DeviceBuffer table = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG,
                                    dCache.pointer()));
                            DeviceBuffer partials = ops.allocate(ops.attendPartialsBytes(tokens, heads, 1, headDim));
                            DeviceBuffer arrivals = ops.upload(new float[tokens])) {
                        assertPreparesAsTheStage(ops, linear, tokens, out, expected,
                                layout + " with " + input + ", rows at " + Arrays.toString(at),
                                (o, next) -> ops.attendRows(dq.pointer(), stride, table.pointer(), false, 0L, o, tokens,
                                        dPositions.pointer(), heads, 1, headDim, 0, scale, partials.pointer(),
                                        partials.byteSize(), arrivals.pointer(), arrivals.byteSize(), next));
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("linears")
    void aLatentAttentionThatAppliesTheInputRuleGivesTheInputStagesBits(Layout layout, ActivationQuant input) {
        // model_attend_latent_rows (DeepSeek's) with o's input rule applied to each head, against the attention,
        // moe_prepare_rows and the linear, one row and three.
        int vDim = 128;
        int heads = 3;
        int lora = 96;
        int rope = 32;
        int nope = 64;
        int in = heads * vDim;
        int out = 200;
        int positions = 70;
        SplittableRandom rnd = new SplittableRandom(layout.name().hashCode() * 7 + input.getClass().hashCode());
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
            LinearWeights w = weights(arena, rnd, layout, input, out, in);
            try (DeviceLinear linear = DeviceLinear.upload(ops, "test_proj", w, null)) {
                boolean expected = linear.headsPrepareInput(vDim);
                float[] cache = RandomWeights.gaussian(rnd, positions * (rope + lora), 1.0);
                float[] kvB = RandomWeights.gaussian(rnd, heads * (nope + vDim) * lora, 1 / Math.sqrt(lora));
                float scale = (float) (1 / Math.sqrt(nope + rope));
                for (long[] at : new long[][] {{positions - 1}, {0, 37, positions - 1}}) {
                    int tokens = at.length;
                    float[] q = RandomWeights.gaussian(rnd, tokens * heads * (nope + rope), 1.0);
                    try (DeviceBuffer dCache = ops.upload(cache); DeviceBuffer dw = ops.upload(kvB);
                            DeviceBuffer dq = ops.upload(q);
                            DeviceBuffer dPositions = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG, at));
                            DeviceBuffer table = ops.upload(arena.allocateFrom(ValueLayout.JAVA_LONG,
                                    dCache.pointer()))) {
                        assertPreparesAsTheStage(ops, linear, tokens, out, expected,
                                layout + " with " + input + ", rows at " + Arrays.toString(at),
                                (o, next) -> ops.attendLatentRows(dq.pointer(), dw.pointer(), table.pointer(), false,
                                        o, tokens, dPositions.pointer(), heads, nope, rope, vDim, lora, scale, next));
                    }
                }
            }
        }
    }
}
