package io.moe4j.quant;

import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.quant.method.CtNvfp4Method;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CtNvfp4MethodTest extends CtTestSupport {


    @ParameterizedTest
    @ValueSource(strings = {"qwen3_ct_nvfp4", "mixtral_ct_nvfp4a16"})
    void nvfp4CasesLoadWithPerShardGlobalScales(String name) {
        try (var c = Cases.open(name); Arena arena = Arena.ofConfined()) {
            assertThat(c.method()).isInstanceOf(CtNvfp4Method.class);
            ExpertWeights w = c.load(arena);
            boolean a16 = name.contains("a16");
            assertThat(w.scheme().name()).isEqualTo("compressed-tensors " + (a16 ? "W4A16" : "W4A4") + " NVFP4");
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.NVFP4);
            assertThat(w.scheme().activations()).isEqualTo(a16 ? ActivationFormat.NONE : ActivationFormat.NVFP4);
            assertThat(w.w13().shards()).isEqualTo(2);
            checkRows(c, w, (cc, e, p, r, col) -> {
                Tensor packed = t(cc, e, p, "weight_packed");
                Tensor scale = t(cc, e, p, "weight_scale");
                float g = t(cc, e, p, "weight_global_scale").getFloat(0);
                int cols = (int) packed.shape()[1] * 2;
                int b = u8(packed, (long) r * cols / 2 + col / 2) & 0xFF;
                int code = col % 2 == 0 ? b & 0xF : b >> 4;
                double s8 = e4m3(u8(scale, (long) r * (cols / 16) + col / 16));
                return (float) (E2M1[code] * s8) / g;
            });
            if (!a16) {
                var a13 = (ActivationQuant.Nvfp4) w.a13();
                var a2 = (ActivationQuant.Nvfp4) w.a2();
                assertThat(a13.globalScale()[3]).isEqualTo(t(c, 3, Projection.GATE, "input_global_scale").getFloat(0));
                assertThat(a2.globalScale()[5]).isEqualTo(t(c, 5, Projection.DOWN, "input_global_scale").getFloat(0));
            }
        }
    }

    @Test
    void nvfp4GateAndUpGlobalScalesStaySeparate(@TempDir Path dir) {
        String up = "model.layers.0.mlp.experts.2.up_proj.weight_global_scale";
        var r = new java.util.HashMap<String, Fixtures.Replacement>();
        float g = 1234.5f;
        r.put(up, new Fixtures.Replacement(DType.F32, new long[]{1},
                ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(g).array()));
        Path d = Fixtures.copyCase("qwen3_ct_nvfp4", dir, r);
        ModelConfig m = ModelConfig.load(d);
        MoeLayerConfig layer = QuantizationConfigTest.layer0(m);
        try (Checkpoint ckpt = Checkpoint.open(d); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = QuantizationConfig.of(m).methodFor(layer).load(ckpt, layer, LoadOptions.ALL, arena);
            float gate = ckpt.tensor("model.layers.0.mlp.experts.2.gate_proj.weight_global_scale").getFloat(0);
            assertThat(w.w13().shardScale(2, 0)).isEqualTo(1f / gate);
            assertThat(w.w13().shardScale(2, w.intermediate())).isEqualTo(1f / g);
        }
    }

    @Test
    void nvfp4WeightsWithFp8InputsAreRefused() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_ct_nvfp4", """
                {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"group_0": {
                 "targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group"},
                 "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("For NVFP4 weights, input quantization must also be NVFP4 format or None for NVFP4A16, found");
    }
}
