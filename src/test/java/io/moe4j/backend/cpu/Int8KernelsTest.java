package io.moe4j.backend.cpu;

import io.moe4j.MoeException;
import io.moe4j.activation.GateLayout;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.PlatformProbe;
import io.moe4j.backend.Support;
import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.util.SplittableRandom;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The int8-activation kernels compute exactly the sums they promise: against a float64 product of the same int8
 * activations (q·d from {@link Q8Inputs}) with the exactly decoded weights ({@link ScalarKernels#decodePanel}), every
 * supported scheme, odd shapes, 1 to 7 tokens (pairs and a single); and the layer stays close to the exact reference.
 */
class Int8KernelsTest {

    private static boolean vectorRuns() {
        return KernelSelection.vectorUnavailable(PlatformProbe.probeReal().vectorBitSize()).isEmpty()
                && !KernelSelection.scalarForced();
    }

    @ParameterizedTest
    @EnumSource(value = SyntheticScheme.class, names = {"MXFP4", "NVFP4_A16", "W4A16", "W4A16_ASYM",
            "W4A16_ACT_ORDER", "W4A16_CHANNEL", "W8A16", "W8A16_GROUP"})
    void panelSumsAreTheQuantizedProducts(SyntheticScheme s) {
        assumeTrue(vectorRuns(), "Vector API kernels unavailable");
        CpuKernels int8 = KernelSelection.int8(KernelSelection.select());
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(1)) {
            ExpertWeights w = Fixtures.weights(s, Fixtures.shape(s, GateLayout.CONCATENATED, 3), 7, arena);
            for (ExpertMatrix em : new ExpertMatrix[] {w.w13(), w.w2()}) {
                PanelMatrix m = PanelPacker.pack(em, arena, pool);
                Scratch scratch = new Scratch();
                scratch.fit(m);
                SplittableRandom rnd = new SplittableRandom(11);
                for (int n = 1; n <= 7; n += 2) {
                    float[] x = new float[n * m.cols()];
                    for (int i = 0; i < x.length; i++) {
                        x[i] = (float) (rnd.nextGaussian() * Math.scalb(1.0, rnd.nextInt(-3, 3)));
                    }
                    for (int e = 0; e < em.experts(); e++) {
                        Q8Inputs q = (Q8Inputs) int8.prepare(m, e, x, 0, n);
                        float[] y = new float[n * m.rows()];
                        int8.multiply(m, e, 0, m.rows(), q, y, 0, m.rows(), scratch);
                        double[] want = reference(m, e, q);
                        for (int i = 0; i < y.length; i++) {
                            assertThat((double) y[i]).as("%s expert %d, n %d, value %d", s, e, n, i)
                                    .isCloseTo(want[i], org.assertj.core.data.Offset.offset(1e-5 * (1 + Math.abs(want[i]))));
                        }
                    }
                }
            }
        }
    }

    /** Σ_c W[r][c] · q[c]·d(block of c) · 2^-K in float64, with W decoded exactly by the scalar kernels. */
    private static double[] reference(PanelMatrix m, int e, Q8Inputs q) {
        ColumnPlan plan = m.plan(e);
        int slots = m.codec().slots();
        int blockWords = Q8Inputs.blockWords(m.codec());
        int padded = plan.paddedColumns();
        double[] out = new double[q.n * m.rows()];
        float[] panel = new float[m.wordsPerPanel() * slots * PanelMatrix.LANES];
        for (int t = 0; t < q.n; t++) {
            double[] xd = new double[padded];
            int b = 0;
            int[] seg = plan.segmentWords();
            for (int g = 0; g + 1 < seg.length; g++) {
                for (int w = seg[g]; w < seg[g + 1]; w += blockWords, b++) {
                    for (int c = w * slots; c < Math.min(seg[g + 1], w + blockWords) * slots; c++) {
                        int pair = q.codes[t][c / slots * (slots / 2) + (c % slots) % (slots / 2)];
                        int code = c % slots < slots / 2 ? (short) pair : pair >> 16;
                        xd[c] = code * (double) q.scales[t][b] * q.post[t];
                    }
                }
            }
            for (int p = 0; p < m.panels(); p++) {
                ScalarKernels.decodePanel(m, e, p, panel);
                for (int lane = 0; lane < PanelMatrix.LANES && p * PanelMatrix.LANES + lane < m.rows(); lane++) {
                    double acc = 0;
                    for (int c = 0; c < padded; c++) {
                        acc += (double) panel[c * PanelMatrix.LANES + lane] * xd[c];
                    }
                    int r = p * PanelMatrix.LANES + lane;
                    double shard = m.shard() == null ? 1 : m.shard()[(e * m.panels() + p) * PanelMatrix.LANES + lane];
                    out[t * m.rows() + r] = acc * shard;
                }
            }
        }
        return out;
    }

    /**
     * Where one FP4 token takes the byte lookups ({@link Int8PanelDot#FP4_BYTES}: 8-lane panels without AVX-512, as in
     * surefire's {@code -XX:UseAVX=2} run), it does take them, and gives the 16-bit lookup's sums to float rounding.
     */
    @ParameterizedTest
    @EnumSource(value = SyntheticScheme.class, names = {"MXFP4", "NVFP4_A16"})
    void oneFp4TokenByByteLookupsGivesTheSixteenBitLookupsSums(SyntheticScheme s) {
        assumeTrue(vectorRuns() && Int8PanelDot.FP4_BYTES, "byte lookups do not run here");
        CpuKernels int8 = KernelSelection.int8(KernelSelection.select());
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(1)) {
            ExpertWeights w = Fixtures.weights(s, Fixtures.shape(s, GateLayout.CONCATENATED, 3), 13, arena);
            PanelMatrix m = PanelPacker.pack(w.w13(), arena, pool);
            Scratch scratch = new Scratch();
            scratch.fit(m);
            SplittableRandom rnd = new SplittableRandom(17);
            float[] x = new float[m.cols()];
            for (int i = 0; i < x.length; i++) {
                x[i] = (float) (rnd.nextGaussian() * Math.scalb(1.0, rnd.nextInt(-6, 6)));
            }
            for (int e = 0; e < w.w13().experts(); e++) {
                Q8Inputs q = (Q8Inputs) int8.prepare(m, e, x, 0, 1);
                assertThat(q.byteLanes).as("the byte lookups' inputs").isNotNull();
                float[] y = new float[m.rows()];
                int8.multiply(m, e, 0, m.rows(), q, y, 0, m.rows(), scratch);
                int[] seg = m.plan(e).segmentWords();
                float[] sums = new float[2 * PanelMatrix.LANES];
                for (int p = 0; p < m.panels(); p++) {
                    VectorScales.scales(m, e, p, scratch.scales);
                    Int8PanelDot.nibbles(m.words(), m.wordOffset(e, p, 0), seg, true, 0, null, null, 0,
                            scratch.scales, q.codes[0], q.scales[0], q.sums[0], sums);
                    for (int lane = 0; lane < PanelMatrix.LANES && p * PanelMatrix.LANES + lane < m.rows(); lane++) {
                        int row = p * PanelMatrix.LANES + lane;
                        double shard = m.shard() == null ? 1 : m.shard()[e * m.panels() * PanelMatrix.LANES + row];
                        double want = sums[lane] * 0.5 * q.post[0] * shard;
                        assertThat((double) y[row]).as("%s expert %d row %d", s, e, row).isCloseTo(want,
                                org.assertj.core.data.Offset.offset(1e-5 * (1 + Math.abs(want))));
                    }
                }
            }
        }
    }

    /** An empty segment (no words, no blocks) between two others leaves the byte lookups' sums as they were. */
    @Test
    void byteLookupsSkipAnEmptySegment() {
        assumeTrue(vectorRuns() && Int8PanelDot.FP4_BYTES, "byte lookups do not run here");
        SyntheticScheme s = SyntheticScheme.MXFP4;
        CpuKernels int8 = KernelSelection.int8(KernelSelection.select());
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(1)) {
            ExpertWeights w = Fixtures.weights(s, Fixtures.shape(s, GateLayout.CONCATENATED, 1), 3, arena);
            PanelMatrix m = PanelPacker.pack(w.w13(), arena, pool);
            SplittableRandom rnd = new SplittableRandom(23);
            float[] x = new float[m.cols()];
            for (int i = 0; i < x.length; i++) {
                x[i] = (float) rnd.nextGaussian();
            }
            Q8Inputs q = (Q8Inputs) int8.prepare(m, 0, x, 0, 1);
            int[] seg = m.plan(0).segmentWords();
            int lanes = PanelMatrix.LANES;
            float[] scales = new float[m.groups() * lanes];
            VectorScales.scales(m, 0, 0, scales);
            // segment 1 repeated as an empty one before it, with a scale of its own that must not count
            int[] withEmpty = new int[seg.length + 1];
            float[] moreScales = new float[scales.length + lanes];
            withEmpty[0] = seg[0];
            withEmpty[1] = seg[1];
            System.arraycopy(seg, 1, withEmpty, 2, seg.length - 1);
            System.arraycopy(scales, 0, moreScales, 0, lanes);
            java.util.Arrays.fill(moreScales, lanes, 2 * lanes, Float.NaN);
            System.arraycopy(scales, lanes, moreScales, 2 * lanes, scales.length - lanes);
            float[] want = new float[4 * lanes];
            float[] got = new float[4 * lanes];
            long base = m.wordOffset(0, 0, 0);
            Int8PanelDot.fp4Bytes(m.words(), base, seg, scales, q.byteLanes[0], q.scales[0], want);
            Int8PanelDot.fp4Bytes(m.words(), base, withEmpty, moreScales, q.byteLanes[0], q.scales[0], got);
            assertThat(java.util.Arrays.copyOf(got, lanes)).containsExactly(java.util.Arrays.copyOf(want, lanes));
            assertThat(want[0]).isNotZero();
        }
    }

    @ParameterizedTest
    @EnumSource(value = SyntheticScheme.class, names = {"MXFP4", "W4A16_ASYM", "W8A16"})
    void layerStaysNearTheExactReference(SyntheticScheme s) {
        assumeTrue(vectorRuns(), "Vector API kernels unavailable");
        try (Arena arena = Arena.ofShared()) {
            SyntheticWeights.Shape shape = Fixtures.shape(s, GateLayout.INTERLEAVED, 4);
            ExpertWeights w = Fixtures.weights(s, shape, 3, arena);
            int tokens = 9;
            float[] x = new float[tokens * w.hidden()];
            SplittableRandom rnd = new SplittableRandom(5);
            for (int i = 0; i < x.length; i++) {
                x[i] = (float) rnd.nextGaussian();
            }
            Routing r = Fixtures.routing(tokens, 2, 4, false, 9);
            float[] want = Fixtures.reference(w, x, tokens, r);
            try (Experts int8 = new CpuBackend().prepare(w, new ExecutionOptions(2, KernelActivations.INT8))) {
                float[] got = Fixtures.run(int8, x, tokens, r, w.hidden());
                // Q8 rounding: each product's input off by at most d/2 = max|x|/254 of its block.
                assertThat(relL2(got, want)).as("%s int8 layer rel L2", s).isLessThan(0.02).isGreaterThan(0);
            }
        }
    }

    @Test
    void refusesSchemesItCannotRunByName() {
        CpuBackend cpu = new CpuBackend();
        for (SyntheticScheme s : new SyntheticScheme[] {SyntheticScheme.BF16, SyntheticScheme.FP8_CHANNEL,
                SyntheticScheme.W4A8, SyntheticScheme.NVFP4}) {
            try (Arena arena = Arena.ofShared()) {
                ExpertWeights w = Fixtures.weights(s, Fixtures.shape(s, GateLayout.CONCATENATED, 2), 1, arena);
                MoeProblem p = MoeProblem.of(w, 2).withKernelActivations(KernelActivations.INT8);
                Support sup = cpu.support(p, PlatformProbe.probeReal());
                assertThat(sup.supported()).as(s.name()).isFalse();
                assertThat(sup.reason()).contains("--activations int8").contains(w.scheme().name());
                assertThatThrownBy(() -> cpu.prepare(w, new ExecutionOptions(1, KernelActivations.INT8)))
                        .isInstanceOf(MoeException.class).hasMessageContaining("--activations int8");
            }
        }
    }

    @Test
    void reasonNamesTheMode() {
        assumeTrue(vectorRuns(), "Vector API kernels unavailable");
        try (Arena arena = Arena.ofShared()) {
            SyntheticScheme s = SyntheticScheme.MXFP4;
            ExpertWeights w = Fixtures.weights(s, Fixtures.shape(s, GateLayout.CONCATENATED, 2), 1, arena);
            Support sup = new CpuBackend().support(MoeProblem.of(w, 2).withKernelActivations(KernelActivations.INT8),
                    PlatformProbe.probeReal());
            assertThat(sup.supported()).isTrue();
            assertThat(sup.reason()).startsWith("int8 activations").contains("-bit vectors");
        }
    }

    @Test
    void propertyForcesTheModeAndIsNamed() {
        assumeTrue(vectorRuns(), "Vector API kernels unavailable");
        String before = System.getProperty(CpuBackend.ACTIVATIONS_PROPERTY);
        System.setProperty(CpuBackend.ACTIVATIONS_PROPERTY, "int8");
        try (Arena arena = Arena.ofShared()) {
            SyntheticScheme s = SyntheticScheme.W4A16;
            ExpertWeights w = Fixtures.weights(s, Fixtures.shape(s, GateLayout.CONCATENATED, 2), 1, arena);
            Support yes = new CpuBackend().support(MoeProblem.of(w, 2), PlatformProbe.probeReal());
            assertThat(yes.reason()).startsWith("int8 activations").contains("-Dmoe4j.cpu.activations=int8");
            SyntheticScheme b = SyntheticScheme.BF16;
            ExpertWeights bw = Fixtures.weights(b, Fixtures.shape(b, GateLayout.CONCATENATED, 2), 1, arena);
            Support no = new CpuBackend().support(MoeProblem.of(bw, 2), PlatformProbe.probeReal());
            assertThat(no.supported()).isFalse();
            assertThat(no.reason()).contains("--activations int8").contains("-Dmoe4j.cpu.activations=int8");
            System.setProperty(CpuBackend.ACTIVATIONS_PROPERTY, "int4");
            assertThatThrownBy(() -> new CpuBackend().support(MoeProblem.of(w, 2), PlatformProbe.probeReal()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-Dmoe4j.cpu.activations=");
        } finally {
            if (before == null) {
                System.clearProperty(CpuBackend.ACTIVATIONS_PROPERTY);
            } else {
                System.setProperty(CpuBackend.ACTIVATIONS_PROPERTY, before);
            }
        }
    }

    @Test
    void parsesTheOption() {
        assertThat(KernelActivations.parse(" INT8 ", "--activations")).isEqualTo(KernelActivations.INT8);
        assertThat(KernelActivations.parse(null, "--activations")).isEqualTo(KernelActivations.FLOAT);
        assertThatThrownBy(() -> KernelActivations.parse("int4", "--activations"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--activations int4");
    }
}
