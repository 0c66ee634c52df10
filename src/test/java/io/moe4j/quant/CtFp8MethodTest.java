package io.moe4j.quant;

import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.quant.method.CtFp8Method;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CtFp8MethodTest extends CtTestSupport {


    @Test
    void fp8TensorKeepsEachShardsScaleAndCollapsesInputScales() {
        try (var c = Cases.open("qwen3_ct_fp8_tensor"); Arena arena = Arena.ofConfined()) {
            assertThat(c.method()).isInstanceOf(CtFp8Method.class);
            ExpertWeights w = c.load(arena);
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.FP8_TENSOR);
            assertThat(w.scheme().activations()).isEqualTo(ActivationFormat.FP8_STATIC);
            checkRows(c, w, (cc, e, p, r, col) -> {
                Tensor wt = t(cc, e, p, "weight");
                return e4m3(u8(wt, (long) r * wt.shape()[1] + col)) * t(cc, e, p, "weight_scale").getFloat(0);
            });
            float max13 = 0;
            for (int e = 0; e < 8; e++) {
                max13 = Math.max(max13, Math.max(t(c, e, Projection.GATE, "input_scale").getFloat(0),
                        t(c, e, Projection.UP, "input_scale").getFloat(0)));
            }
            assertThat(((ActivationQuant.Fp8Static) w.a13()).scale()).containsOnly(max13);
        }
    }

    @Test
    void fp8ChannelWithDynamicTokenActivations() {
        try (var c = Cases.open("qwen3_ct_fp8_channel"); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = c.load(arena);
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.FP8_CHANNEL);
            assertThat(w.a13()).isInstanceOf(ActivationQuant.Fp8PerToken.class);
            assertThat(w.a2()).isInstanceOf(ActivationQuant.Fp8PerToken.class);
            checkRows(c, w, (cc, e, p, r, col) -> {
                Tensor wt = t(cc, e, p, "weight");
                return e4m3(u8(wt, (long) r * wt.shape()[1] + col)) * t(cc, e, p, "weight_scale").getFloat(r);
            });
        }
    }

    @Test
    void fp8BlockWithDynamicGroupActivations() {
        try (var c = Cases.open("deepseek_ct_fp8_block"); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = c.load(arena);
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.FP8_BLOCK);
            assertThat(w.scheme().activations()).isEqualTo(ActivationFormat.FP8_GROUP128);
            assertThat(((ActivationQuant.Fp8Group) w.a13()).group()).isEqualTo(128);
            assertThat(w.w13().blockScales().rowBlocks()).isEqualTo(2);
            checkRows(c, w, (cc, e, p, r, col) -> {
                Tensor wt = t(cc, e, p, "weight");
                Tensor st = t(cc, e, p, "weight_scale");
                return e4m3(u8(wt, (long) r * wt.shape()[1] + col)) * st.getFloat((r / 128) * st.shape()[1] + col / 128);
            });
        }
    }

    @Test
    void fp8ChannelWithStaticInputIsRefused() {
        assertThatThrownBy(() -> new CtFp8Method(args(8, "float", null, "channel", false), args(8, "float", null, "token", false)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("For FP8 Fused MoE layer, we require either per tensor or channelwise, dynamic per token quantization.");
    }

    @Test
    void fp8MismatchedStrategiesAreRefused() {
        assertThatThrownBy(() -> new CtFp8Method(args(8, "float", null, "channel", false), args(8, "float", null, "tensor", false)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("Found weights channel, activations tensor.");
    }

    @Test
    void fp8BlockNotDividingTheIntermediateSizeIsRefused() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("deepseek_ct_fp8_block", """
                {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"group_0": {
                 "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "block",
                 "block_structure": [96, 128]}, "input_activations": {"num_bits": 8, "type": "float",
                 "strategy": "group", "group_size": 128, "dynamic": true}}}}""");
        MoeLayerConfig layer = QuantizationConfigTest.layer0(m);
        try (Checkpoint ckpt = Checkpoint.open(Cases.dir("deepseek_ct_fp8_block")); Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(layer).load(ckpt, layer, LoadOptions.ALL, arena))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("The output_size of gate's and up's weight = 128 is not divisible by weight quantization block_n = 96.");
        }
    }

    @Test
    void int8W8a8IsNamedAsUnsupported() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_ct_w4a8_g32", """
                {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"group_0": {
                 "targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
                 "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": true}}}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m)))
                .isInstanceOf(MoeException.class).hasMessageContaining("CompressedTensorsW8A8Int8MoEMethod");
    }
}
