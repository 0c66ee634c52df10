package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Act-order reordering on the host (no GPU): the permuted codes hold the same weights, grouped. */
class ActOrderTest {

    @Test
    void sortedColumnsHoldTheSameValuesWithContiguousGroups() {
        try (Arena arena = Arena.ofConfined()) {
            RandomWeights.Layout l = RandomWeights.Layout.scaled("int4", WeightFormat.INT4_GROUP, CodeType.INT4,
                    ScaleType.F32, 1, 32).withActOrder();
            ExpertMatrix m = RandomWeights.matrix(arena, new SplittableRandom(9), l, 2, 5, 96, 5);
            assertThat(UnitMatrix.unsupportedReason(m)).isNull();
            ActOrder order = ActOrder.of(m);
            MemorySegment permuted = order.permuteCodes(arena, m);
            ExpertMatrix sorted = new ExpertMatrix(m.experts(), m.rows(), m.cols(), m.codes(), permuted, m.blockScales(),
                    null, null, 0, null);
            float[] original = new float[96];
            float[] reordered = new float[96];
            for (int e = 0; e < 2; e++) {
                for (int r = 0; r < 5; r++) {
                    MatrixDequantizer.row(m, e, r, original);
                    MatrixDequantizer.row(sorted, e, r, reordered);
                    for (int k = 0; k < 96; k++) {
                        assertThat(reordered[k]).isEqualTo(original[order.order()[e][k]]);
                        assertThat(m.groupIndex()[e][order.order()[e][k]]).isEqualTo(k / 32);
                    }
                }
            }
        }
    }

    @Test
    void unequalGroupsAreRefusedWithTheReason() {
        try (Arena arena = Arena.ofConfined()) {
            RandomWeights.Layout l = RandomWeights.Layout.scaled("int4", WeightFormat.INT4_GROUP, CodeType.INT4,
                    ScaleType.F32, 1, 32).withActOrder();
            ExpertMatrix m = RandomWeights.matrix(arena, new SplittableRandom(10), l, 1, 3, 64, 3);
            int[][] g = {m.groupIndex()[0].clone()};
            for (int c = 0; c < 64; c++) {
                g[0][c] = c < 40 ? 0 : 1; // 40 + 24 columns
            }
            ExpertMatrix uneven = new ExpertMatrix(1, 3, 64, CodeType.INT4, m.data(), m.blockScales(), null, null, 0, g);
            assertThat(UnitMatrix.unsupportedReason(uneven)).contains("unequal sizes");
        }
    }

    /** A w13 whose gate and up halves carry different act-order maps is refused before any upload, naming g_idx. */
    @Test
    void gateAndUpWithDifferentMapsAreRefused() {
        try (Arena arena = Arena.ofConfined()) {
            RandomWeights.Layout l = RandomWeights.Layout.scaled("int4", WeightFormat.INT4_GROUP, CodeType.INT4,
                    ScaleType.F32, 1, 32).withActOrder();
            ExpertMatrix m = RandomWeights.matrix(arena, new SplittableRandom(11), l, 1, 4, 64, 4);
            int[][] g = {m.groupIndex()[0].clone(), new int[64]};
            for (int c = 0; c < 64; c++) {
                g[1][c] = 1 - g[0][c]; // the up half's groups swapped
            }
            ExpertMatrix split = new ExpertMatrix(1, 4, 64, CodeType.INT4, m.data(), m.blockScales(), null, null, 0, g);
            assertThat(split.groupParts()).isEqualTo(2);
            assertThat(UnitMatrix.unsupportedReason(split)).contains("gate_proj and up_proj with different weight_g_idx");
        }
    }
}
