package io.moe4j.backend.cpu;

import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.MatrixDequantizer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.assertj.core.data.Offset;

import java.lang.foreign.Arena;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The packed panels decode back to the reference's weights: the scalar decoder equals MatrixDequantizer (before
 * shard scales, which the kernels apply to row sums) and the vector decoder equals the scalar one bit for bit.
 */
class PanelDecodeTest {

    @ParameterizedTest
    @EnumSource(SyntheticScheme.class)
    void scalarPanelsAreTheReferenceWeights(SyntheticScheme scheme) {
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(1)) {
            for (ExpertMatrix m : matrices(scheme, arena)) {
                PanelMatrix pm = PanelPacker.pack(m, arena, pool);
                Scratch s = new Scratch();
                s.fit(pm);
                float[] row = new float[m.cols()];
                for (int e = 0; e < m.experts(); e++) {
                    ColumnPlan plan = pm.plan(e);
                    for (int p = 0; p < pm.panels(); p++) {
                        ScalarKernels.decodePanel(pm, e, p, s.panel);
                        for (int lane = 0; lane < PanelMatrix.LANES && p * PanelMatrix.LANES + lane < m.rows(); lane++) {
                            int r = p * PanelMatrix.LANES + lane;
                            MatrixDequantizer.row(m, e, r, row);
                            float shard = m.shardScale(e, r);
                            for (int i = 0; i < plan.paddedColumns(); i++) {
                                int c = plan.source()[i];
                                if (c < 0) {
                                    continue; // padding meets a zero input
                                }
                                // The reference rounds (code·scale)·shard, the kernels code·scale and then the sum·shard.
                                assertThat(s.panel[i * PanelMatrix.LANES + lane] * shard).as("%s expert %d row %d col %d", scheme, e, r, c)
                                        .isCloseTo(row[c], Offset.offset(Math.ulp(row[c]) * 2));
                            }
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(SyntheticScheme.class)
    void vectorPanelsEqualScalarPanels(SyntheticScheme scheme) {
        Assumptions.assumeTrue(KernelsUnderTest.names().contains("vector"), "no usable Vector API");
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(1)) {
            for (ExpertMatrix m : matrices(scheme, arena)) {
                PanelMatrix pm = PanelPacker.pack(m, arena, pool);
                Scratch vector = new Scratch();
                vector.fit(pm);
                float[] scalar = new float[vector.panel.length];
                for (int e = 0; e < m.experts(); e++) {
                    for (int p = 0; p < pm.panels(); p++) {
                        VectorPanelDecoder.decode(pm, e, p, vector, vector.panel);
                        ScalarKernels.decodePanel(pm, e, p, scalar);
                        int n = pm.plan(e).paddedColumns() * PanelMatrix.LANES;
                        for (int i = 0; i < n; i++) {
                            assertThat(Float.floatToIntBits(vector.panel[i])).as("%s expert %d panel %d at %d", scheme,
                                    e, p, i).isEqualTo(Float.floatToIntBits(scalar[i]));
                        }
                    }
                }
            }
        }
    }

    /**
     * Where a checkpoint's row bytes are already lane words (FP4, FP8, INT4, INT8, BF16 in column order), packing
     * copies them as words: the same panel words, scales and zero points as packing every code through the codec.
     */
    @ParameterizedTest
    @EnumSource(SyntheticScheme.class)
    void wordCopiesPackWhatTheCodecPacks(SyntheticScheme scheme) {
        try (Arena arena = Arena.ofShared(); WorkerPool pool = new WorkerPool(2)) {
            // The fixtures' odd widths take the codec everywhere; 264 x 128 (whole words and scale blocks, and 264
            // rows of w2, which a 16-lane panel pads) is a checkpoint's case.
            SyntheticWeights.Shape hub = new SyntheticWeights.Shape(3, 264, 128, GateLayout.CONCATENATED,
                    io.moe4j.activation.Activation.SILU_AND_MUL, false);
            ExpertWeights w = Fixtures.weights(scheme, hub, 5, arena);
            java.util.List<ExpertMatrix> all = new java.util.ArrayList<>(java.util.List.of(matrices(scheme, arena)));
            all.add(w.w13().partsAsExperts());
            all.add(w.w2());
            for (ExpertMatrix m : all) {
                PanelMatrix copied = PanelPacker.pack(m, arena, pool, true);
                PanelMatrix coded = PanelPacker.pack(m, arena, pool, false);
                assertThat(copied.words().mismatch(coded.words())).as("%s words", scheme).isEqualTo(-1L);
                if (coded.scales() != null) {
                    assertThat(copied.scales().mismatch(coded.scales())).as("%s scales", scheme).isEqualTo(-1L);
                }
                if (coded.zeros() != null) {
                    assertThat(copied.zeros().mismatch(coded.zeros())).as("%s zero points", scheme).isEqualTo(-1L);
                }
            }
        }
    }

    private static ExpertMatrix[] matrices(SyntheticScheme scheme, Arena arena) {
        ExpertWeights w = Fixtures.weights(scheme, Fixtures.shape(scheme, GateLayout.CONCATENATED, 3), 21, arena);
        // A w13 with a map per half packs as one expert per half (as CpuExperts packs it).
        return new ExpertMatrix[] {w.w13().partsAsExperts(), w.w2()};
    }
}
