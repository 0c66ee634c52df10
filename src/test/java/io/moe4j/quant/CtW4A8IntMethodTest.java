package io.moe4j.quant;

import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.quant.method.CtW4A8IntMethod;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CtW4A8IntMethodTest extends CtTestSupport {

    @Test
    void w4a8IntPacksNibblesAndQuantizesActivationsPerToken() {
        try (var c = Cases.open("qwen3_ct_w4a8_g32"); Arena arena = Arena.ofConfined()) {
            assertThat(c.method()).isInstanceOf(CtW4A8IntMethod.class);
            ExpertWeights w = c.load(arena);
            assertThat(w.scheme().name()).isEqualTo("compressed-tensors W4A8 int g32");
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.INT4_GROUP);
            assertThat(w.scheme().activations()).isEqualTo(ActivationFormat.INT8_TOKEN);
            assertThat(w.w13().codes()).isEqualTo(CodeType.INT4);
            assertThat(w.a13()).isInstanceOf(ActivationQuant.Int8PerToken.class);
            checkRows(c, w, (cc, e, p, r, col) -> {
                Tensor wt = t(cc, e, p, "weight");
                Tensor st = t(cc, e, p, "weight_scale");
                return u8(wt, (long) r * wt.shape()[1] + col) * (double) st.getFloat(r * st.shape()[1] + col / 32);
            });
        }
    }

    @Test
    void w4a8WithoutDynamicPerTokenInputIsRefused() {
        assertThatThrownBy(() -> new CtW4A8IntMethod(args(4, "int", 32, "group", false), args(8, "int", null, "tensor", false)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("W4A8-int MoE needs dynamic per-token activation quantization.");
    }

    @Test
    void w4a8WithEightBitWeightsIsRefused() {
        assertThatThrownBy(() -> new CtW4A8IntMethod(args(8, "int", 32, "group", false), args(8, "int", null, "token", true)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("This method only supports 4-bit weights (num_bits=4).");
    }

    @Test
    void unsupportedCompressedTensorsSchemeIsNamed() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_ct_w4a8_g32", """
                {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"group_0": {
                 "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32},
                 "input_activations": {"num_bits": 8, "type": "int", "strategy": "tensor", "dynamic": false}}}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m)))
                .isInstanceOf(MoeException.class).hasMessageContaining("Unsupported FusedMoe scheme");
    }

    @Test
    void w4a8ValuesOutsideInt4AreRefused(@TempDir Path dir) {
        String bad = "model.layers.0.mlp.experts.1.gate_proj.weight";
        byte[] data = new byte[64 * 64];
        data[100] = 9;
        var r = new java.util.HashMap<String, Fixtures.Replacement>();
        r.put(bad, new Fixtures.Replacement(DType.I8, new long[]{64, 64}, data));
        Path d = Fixtures.copyCase("qwen3_ct_w4a8_g32", dir, r);
        ModelConfig m = ModelConfig.load(d);
        MoeLayerConfig layer = QuantizationConfigTest.layer0(m);
        try (Checkpoint ckpt = Checkpoint.open(d); Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(layer).load(ckpt, layer, LoadOptions.ALL, arena))
                    .isInstanceOf(MoeException.class).hasMessageContaining(bad).hasMessageContaining("outside the int4 range");
        }
    }
}
