package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.moe4j.backend.cuda.RandomWeights.Layout;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.RowStack;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import java.lang.foreign.Arena;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/**
 * q, k and v stacked by rows into one matrix (what a device model's attention uploads as one linear) keep every
 * element's value, in every layout the units GEMM reads; layouts that cannot stack say why. Runs without a GPU.
 */
class RowStackTest {

    static Stream<Layout> layouts() {
        return Stream.of(
                Layout.dense(WeightFormat.BF16, CodeType.BF16),
                Layout.scaled("mxfp4", WeightFormat.MXFP4, CodeType.FP4_E2M1, ScaleType.E8M0, 1, 32),
                Layout.scaled("mxfp6_e2m3", WeightFormat.MXFP6_E2M3, CodeType.FP6_E2M3, ScaleType.E8M0, 1, 32),
                Layout.scaled("fp8_block", WeightFormat.FP8_BLOCK, CodeType.FP8_E4M3, ScaleType.F32, 128, 128),
                Layout.scaled("fp8_channel", WeightFormat.FP8_CHANNEL, CodeType.FP8_E4M3, ScaleType.F32, 1, 0),
                Layout.scaled("int8_group64", WeightFormat.INT8_GROUP, CodeType.INT8, ScaleType.F32, 1, 64).withZeros(),
                Layout.scaled("int4_g32", WeightFormat.INT4_GROUP, CodeType.INT4, ScaleType.F32, 1, 32));
    }

    @ParameterizedTest
    @MethodSource("layouts")
    void stackedRowsAreThePartsRows(Layout l) {
        SplittableRandom rnd = new SplittableRandom(l.name().hashCode());
        try (Arena arena = Arena.ofConfined()) {
            List<ExpertMatrix> parts = List.of(RandomWeights.matrix(arena, rnd, l, 1, 256, 384, 0),
                    RandomWeights.matrix(arena, rnd, l, 1, 128, 384, 0), RandomWeights.matrix(arena, rnd, l, 1, 128, 384, 0));
            assertThat(RowStack.unsupportedReason(parts)).isNull();
            assertSameRows(RowStack.of(arena, parts), parts);
        }
    }

    @Test
    void perTensorScalesOfEachPartBecomeShardsThatTileEveryPart() {
        Layout l = Layout.scaled("nvfp4", WeightFormat.NVFP4, CodeType.FP4_E2M1, ScaleType.E4M3, 1, 16);
        SplittableRandom rnd = new SplittableRandom(7);
        try (Arena arena = Arena.ofConfined()) {
            Layout shards = l.withShards();
            List<ExpertMatrix> parts = List.of(RandomWeights.matrix(arena, rnd, shards, 1, 192, 64, 192),
                    RandomWeights.matrix(arena, rnd, shards, 1, 64, 64, 32), RandomWeights.matrix(arena, rnd, l, 1, 64, 64, 0));
            ExpertMatrix stacked = RowStack.of(arena, parts);
            assertThat(stacked.shardRows()).isEqualTo(32);
            assertSameRows(stacked, parts);
        }
    }

    @Test
    void layoutsThatCannotStackSayWhy() {
        SplittableRandom rnd = new SplittableRandom(3);
        Layout block = Layout.scaled("fp8_block", WeightFormat.FP8_BLOCK, CodeType.FP8_E4M3, ScaleType.F32, 128, 128);
        Layout int4 = Layout.scaled("int4_g32", WeightFormat.INT4_GROUP, CodeType.INT4, ScaleType.F32, 1, 32);
        try (Arena arena = Arena.ofConfined()) {
            ExpertMatrix straddling = RandomWeights.matrix(arena, rnd, block, 1, 192, 256, 0);
            ExpertMatrix whole = RandomWeights.matrix(arena, rnd, block, 1, 128, 256, 0);
            assertThat(RowStack.unsupportedReason(List.of(straddling, whole))).contains("straddling");
            assertThat(RowStack.unsupportedReason(List.of(whole, straddling))).isNull(); // the last part may end inside a block
            assertThat(RowStack.unsupportedReason(List.of(whole, RandomWeights.matrix(arena, rnd, int4, 1, 128, 256, 0))))
                    .contains("code types");
            ExpertMatrix actOrder = RandomWeights.matrix(arena, rnd, int4.withActOrder(), 1, 64, 256, 0);
            assertThat(RowStack.unsupportedReason(List.of(actOrder, actOrder))).contains("act-order");
            assertThatThrownBy(() -> RowStack.of(arena, List.of(actOrder, actOrder)))
                    .hasMessageContaining("act-order");
        }
    }

    @Test
    void actOrderPartsStackWithTheirColumnOrders() {
        // a shared expert's gate and up (GateUpStack): one map when they agree, else one a part
        SplittableRandom rnd = new SplittableRandom(9);
        Layout int4 = Layout.scaled("int4_g32", WeightFormat.INT4_GROUP, CodeType.INT4, ScaleType.F32, 1, 32)
                .withActOrder();
        try (Arena arena = Arena.ofConfined()) {
            ExpertMatrix gate = RandomWeights.matrix(arena, rnd, int4, 1, 64, 256, 0);
            ExpertMatrix up = RandomWeights.matrix(arena, rnd, int4, 1, 64, 256, 0);
            ExpertMatrix agreeing = RowStack.withColumnOrders(arena, List.of(gate, gate));
            assertThat(agreeing.groupParts()).isEqualTo(1);
            assertThat(agreeing.groupIndex()[0]).isEqualTo(gate.groupIndex()[0]);
            assertSameRows(agreeing, List.of(gate, gate));
            ExpertMatrix differing = RowStack.withColumnOrders(arena, List.of(gate, up));
            assertThat(differing.groupParts()).isEqualTo(2);
            assertThat(differing.groupIndex()[1]).isEqualTo(up.groupIndex()[0]);
            assertSameRows(differing, List.of(gate, up));
            ExpertMatrix plain = RandomWeights.matrix(arena, rnd,
                    Layout.scaled("int4_g32", WeightFormat.INT4_GROUP, CodeType.INT4, ScaleType.F32, 1, 32), 1, 64,
                    256, 0);
            assertThatThrownBy(() -> RowStack.withColumnOrders(arena, List.of(gate, plain)))
                    .hasMessageContaining("some parts only");
        }
    }

    @Test
    void linearsStackOnlyWithOneInputRule() {
        SplittableRandom rnd = new SplittableRandom(5);
        Layout block = Layout.scaled("fp8_block", WeightFormat.FP8_BLOCK, CodeType.FP8_E4M3, ScaleType.F32, 128, 128);
        QuantScheme scheme = new QuantScheme("fp8", WeightFormat.FP8_BLOCK, ActivationFormat.FP8_STATIC, false);
        try (Arena arena = Arena.ofConfined()) {
            ExpertMatrix w = RandomWeights.matrix(arena, rnd, block, 1, 128, 256, 0);
            LinearWeights a = new LinearWeights(scheme, w, new ActivationQuant.Fp8Static(new float[] {0.5f}));
            LinearWeights same = new LinearWeights(scheme, w, new ActivationQuant.Fp8Static(new float[] {0.5f}));
            LinearWeights other = new LinearWeights(scheme, w, new ActivationQuant.Fp8Static(new float[] {0.25f}));
            LinearWeights group = new LinearWeights(scheme, w, new ActivationQuant.Fp8Group(128));
            assertThat(DeviceLinear.stacks(List.of(a, same, same))).isTrue();
            assertThat(DeviceLinear.stacks(List.of(a, same, other))).isFalse();
            assertThat(DeviceLinear.stacks(List.of(group, group, a))).isFalse();
            assertThat(DeviceLinear.stacks(List.of(group, new LinearWeights(scheme, w, new ActivationQuant.Fp8Group(128)))))
                    .isTrue();
        }
    }

    private static void assertSameRows(ExpertMatrix stacked, List<ExpertMatrix> parts) {
        float[] got = new float[stacked.cols()];
        float[] want = new float[stacked.cols()];
        int row = 0;
        for (ExpertMatrix p : parts) {
            for (int r = 0; r < p.rows(); r++, row++) {
                MatrixDequantizer.row(stacked, 0, row, got);
                MatrixDequantizer.row(p, 0, r, want);
                assertThat(got).as("row %d (row %d of its part)", row, r).containsExactly(want);
            }
        }
        assertThat(row).isEqualTo(stacked.rows());
    }
}
