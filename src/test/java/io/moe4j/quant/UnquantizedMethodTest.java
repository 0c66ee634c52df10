package io.moe4j.quant;

import io.moe4j.MoeException;
import io.moe4j.config.Projection;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.method.SharedExpertLoader;
import io.moe4j.quant.method.UnquantizedMethod;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class UnquantizedMethodTest {

    @ParameterizedTest
    @ValueSource(strings = {"mixtral_bf16", "qwen3_bf16_norm", "qwen3_bf16_nonorm", "deepseek_bf16_grouped"})
    void perExpertFamiliesFuseGateThenUpRows(String name) {
        try (var c = Cases.open(name); Arena arena = Arena.ofConfined()) {
            assertThat(c.method()).isInstanceOf(UnquantizedMethod.class);
            ExpertWeights w = c.load(arena);
            assertThat(w.scheme().name()).isEqualTo("bf16");
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.BF16);
            assertThat(w.gateLayout()).isEqualTo(GateLayout.CONCATENATED);
            assertThat(w.a13()).isEqualTo(ActivationQuant.NONE);
            int inter = c.layer().intermediate();
            for (int e : new int[]{0, w.numExperts() - 1}) {
                for (int r : new int[]{0, inter - 1, inter, 2 * inter - 1}) {
                    Projection p = r < inter ? Projection.GATE : Projection.UP;
                    Tensor t = c.checkpoint().tensor(c.layer().experts().tensor(e, p, "weight"));
                    assertThat(Dequant.row(w.w13(), e, r)).containsExactly(rowOf(t, r % inter));
                }
                Tensor down = c.checkpoint().tensor(c.layer().experts().tensor(e, Projection.DOWN, "weight"));
                assertThat(Dequant.row(w.w2(), e, 5)).containsExactly(rowOf(down, 5));
            }
        }
    }

    @Test
    void gptOssBf16IsTransposedKeepsInterleavedRowsAndBiases() {
        try (var c = Cases.open("gptoss_bf16"); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = c.load(arena);
            assertThat(w.gateLayout()).isEqualTo(GateLayout.INTERLEAVED);
            Tensor gateUp = c.checkpoint().tensor("model.layers.0.mlp.experts.gate_up_proj");
            Tensor down = c.checkpoint().tensor("model.layers.0.mlp.experts.down_proj");
            int h = w.hidden();
            int i = w.intermediate();
            for (int e : new int[]{0, 3, 7}) {
                for (int r : new int[]{0, 1, 2, 2 * i - 1}) {
                    assertThat(Dequant.row(w.w13(), e, r)).containsExactly(column(gateUp, e, h, 2 * i, r));
                }
                assertThat(Dequant.row(w.w2(), e, 9)).containsExactly(column(down, e, i, h, 9));
            }
            Tensor b13 = c.checkpoint().tensor("model.layers.0.mlp.experts.gate_up_proj_bias");
            assertThat(w.w13Bias()).hasSize(8 * 2 * i);
            assertThat(w.w13Bias()[3 * 2 * i + 5]).isEqualTo(b13.getFloat(3 * 2 * i + 5));
            assertThat(w.w2Bias()).hasSize(8 * h);
            assertThat(w.activation()).isEqualTo(io.moe4j.activation.Activation.SWIGLU_OAI);
            assertThat(w.swigluLimit()).isEqualTo(7f);
        }
    }

    @Test
    void llama4GateUpIsTransposedGateFirst() {
        try (var c = Cases.open("llama4_bf16_top1"); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = c.load(arena);
            assertThat(w.gateLayout()).isEqualTo(GateLayout.CONCATENATED);
            Tensor gateUp = c.checkpoint().tensor("model.layers.0.feed_forward.experts.gate_up_proj");
            int h = w.hidden();
            int i = w.intermediate();
            assertThat(i).isEqualTo(32);
            for (int r : new int[]{0, i - 1, i, 2 * i - 1}) {
                assertThat(Dequant.row(w.w13(), 6, r)).containsExactly(column(gateUp, 6, h, 2 * i, r));
            }
            assertThat(w.w13Bias()).isNull();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"deepseek_bf16_grouped", "llama4_bf16_top1", "deepseek_ct_fp8_block"})
    void sharedExpertLoadsAsOneUnquantizedExpert(String name) {
        try (var c = Cases.open(name); Arena arena = Arena.ofConfined()) {
            ExpertWeights s = SharedExpertLoader.load(c.checkpoint(), c.layer(), arena);
            int is = c.layer().shared().intermediate();
            assertThat(s.numExperts()).isEqualTo(1);
            assertThat(s.intermediate()).isEqualTo(is);
            assertThat(s.scheme().weights()).isEqualTo(WeightFormat.BF16);
            assertThat(s.a13()).isEqualTo(ActivationQuant.NONE);
            Tensor up = c.checkpoint().tensor(c.layer().shared().weight(Projection.UP));
            assertThat(Dequant.row(s.w13(), 0, is + 3)).containsExactly(rowOf(up, 3));
            Tensor down = c.checkpoint().tensor(c.layer().shared().weight(Projection.DOWN));
            assertThat(Dequant.row(s.w2(), 0, 7)).containsExactly(rowOf(down, 7));
        }
    }

    @Test
    void sharedExpertOfALayerWithoutOneFails() {
        try (var c = Cases.open("mixtral_bf16"); Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> SharedExpertLoader.load(c.checkpoint(), c.layer(), arena))
                    .isInstanceOf(MoeException.class).hasMessageContaining("no shared expert");
        }
    }

    static float[] rowOf(Tensor t, int r) {
        int cols = (int) t.shape()[t.shape().length - 1];
        float[] out = new float[cols];
        for (int c = 0; c < cols; c++) {
            out[c] = t.getFloat((long) r * cols + c);
        }
        return out;
    }

    /** Column r of expert e of a stacked [E, in, out] tensor: row r of its transpose. */
    static float[] column(Tensor t, int e, int in, int out, int r) {
        float[] col = new float[in];
        for (int c = 0; c < in; c++) {
            col[c] = t.getFloat(((long) e * in + c) * out + r);
        }
        return col;
    }
}
