package io.moe4j.model.linear;

import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.SafetensorsException;
import io.moe4j.safetensors.SafetensorsWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad input gets one clear error naming the tensor, module, scheme or option; and the exclusion rules as written. */
class LinearErrorsTest {
    private static final String NVFP4 = "m_qwen3_ct_nvfp4";

    private static LinearFactory factory(Checkpoint ckpt, String name, String backend) {
        return Linears.factory(ckpt, ModelConfig.load(ModelCases.dir(name)), backend, 1);
    }

    @Test
    void aMissingTensorIsNamed() {
        try (Checkpoint ckpt = Checkpoint.open(ModelCases.dir(NVFP4)); LinearFactory f = factory(ckpt, NVFP4, "cpu")) {
            assertThatThrownBy(() -> f.load("model.layers.0.self_attn.x_proj", 128, 128, false))
                    .isInstanceOf(SafetensorsException.class)
                    .hasMessageContaining("model.layers.0.self_attn.x_proj.weight_packed").hasMessageContaining("missing");
            assertThatThrownBy(() -> f.load("model.layers.0.self_attn.q_proj", 128, 128, true))
                    .isInstanceOf(SafetensorsException.class)
                    .hasMessageContaining("model.layers.0.self_attn.q_proj.bias").hasMessageContaining("missing");
        }
    }

    @Test
    void aWrongShapeIsNamed() {
        try (Checkpoint ckpt = Checkpoint.open(ModelCases.dir(NVFP4));
             LinearFactory f = factory(ckpt, NVFP4, "emulation")) {
            assertThatThrownBy(() -> f.load("model.layers.0.self_attn.k_proj", 128, 96, false))
                    .isInstanceOf(SafetensorsException.class)
                    .hasMessageContaining("model.layers.0.self_attn.k_proj.weight_packed")
                    .hasMessageContaining("expected shape [96, 64] but found [64, 64]");
            assertThatThrownBy(() -> f.load("lm_head", 64, 256, false))
                    .isInstanceOf(SafetensorsException.class).hasMessageContaining("lm_head.weight")
                    .hasMessageContaining("expected shape [256, 64]");
            assertThatThrownBy(() -> f.load("lm_head", 0, 256, false))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lm_head");
            Linear head = f.load("lm_head", 128, 256, false);
            assertThatThrownBy(() -> head.forward(new float[100], 1, new float[256]))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lm_head");
        }
    }

    @Test
    void anUnknownBackendIsNamed() {
        try (Checkpoint ckpt = Checkpoint.open(ModelCases.dir(NVFP4))) {
            assertThatThrownBy(() -> factory(ckpt, NVFP4, "cuda"))
                    .isInstanceOf(MoeException.class).hasMessageContaining("'cuda'")
                    .hasMessageContaining("emulation, cpu");
        }
    }

    @Test
    void anUnsupportedSchemeIsNamedWithItsModule(@TempDir Path dir) {
        QuantizationConfig ct = SyntheticCheckpoint.write(dir, """
                {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"g": {
                 "targets": ["Linear"], "weights": {"num_bits": 2, "type": "int", "strategy": "tensor"},
                 "input_activations": {"num_bits": 8, "type": "int", "strategy": "tensor", "dynamic": true}}}}""",
                new SafetensorsWriter());
        assertThatThrownBy(() -> ct.linearMethod("model.layers.0.self_attn.q_proj"))
                .isInstanceOf(MoeException.class).hasMessageContaining("model.layers.0.self_attn.q_proj")
                .hasMessageContaining("\"num_bits\":2");
        QuantizationConfig perTensorFp8 = SyntheticCheckpoint.write(dir, """
                {"quant_method": "fp8", "activation_scheme": "dynamic"}""", new SafetensorsWriter());
        assertThatThrownBy(() -> perTensorFp8.linearMethod("model.layers.0.mlp.down_proj"))
                .isInstanceOf(MoeException.class).hasMessageContaining("weight_block_size")
                .hasMessageContaining("model.layers.0.mlp.down_proj");
        QuantizationConfig staticBlocks = SyntheticCheckpoint.write(dir, """
                {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {
                 "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "block",
                 "block_structure": [128, 128]}, "input_activations": {"num_bits": 8, "type": "float",
                 "strategy": "tensor", "dynamic": false}}}}""", new SafetensorsWriter());
        assertThatThrownBy(() -> staticBlocks.linearMethod("model.layers.0.self_attn.o_proj"))
                .isInstanceOf(MoeException.class).hasMessageContaining("model.layers.0.self_attn.o_proj")
                .hasMessageContaining("static");
    }

    @Test
    void exclusionRulesAsEachProducerWritesThem(@TempDir Path dir) {
        // compressed-tensors: re: regexes matched from the start, exact names.
        QuantizationConfig ct = QuantizationConfig.of(ModelConfig.load(ModelCases.dir("m_mixtral_ct_fp8_tensor")));
        assertThat(ct.linearMethod("lm_head").quantized()).isFalse();
        assertThat(ct.linearMethod("model.layers.1.block_sparse_moe.gate").quantized()).isFalse();
        assertThat(ct.linearMethod("model.layers.1.mlp.gate").quantized()).isFalse();
        assertThat(ct.linearMethod("model.layers.1.mlp.gate_proj").quantized()).isTrue();
        assertThat(ct.linearMethod("model.layers.0.mlp.shared_experts.up_proj").quantized()).isFalse();
        // The embedding, which a tied lm_head multiplies with, is no Linear: never quantized.
        assertThat(ct.linearMethod("model.embed_tokens").quantized()).isFalse();
        // Quark: shell globs over the whole name.
        QuantizationConfig quark = QuantizationConfig.of(ModelConfig.load(ModelCases.dir("m_qwen3_quark_w_mxfp4_a_mxfp4")));
        assertThat(quark.linearMethod("model.layers.0.mlp.gate").quantized()).isFalse();
        assertThat(quark.linearMethod("model.layers.0.mlp.gate_proj").quantized()).isTrue();
        assertThat(quark.linearMethod("model.layers.3.mlp.shared_experts.down_proj").quantized()).isFalse();
        assertThat(quark.linearMethod("model.layers.0.self_attn.q_proj").quantized()).isTrue();
        // gpt-oss mxfp4 quantizes the routed experts only.
        QuantizationConfig mxfp4 = QuantizationConfig.of(ModelConfig.load(ModelCases.dir("m_gptoss_mxfp4")));
        assertThat(mxfp4.linearMethod("model.layers.0.self_attn.q_proj").quantized()).isFalse();
        assertThat(mxfp4.linearMethod("model.layers.0.mlp.down_proj").quantized()).isFalse();
        // hub fp8: lm_head always; modules_to_not_convert as transformers matches them (regex from the start, or
        // the end of the name), so a plain name also excludes the modules whose names it begins.
        QuantizationConfig fp8 = SyntheticCheckpoint.write(dir, """
                {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
                 "modules_to_not_convert": ["model.layers.0.mlp.gate", "kv_b_proj"]}""", new SafetensorsWriter());
        assertThat(fp8.linearMethod("lm_head").quantized()).isFalse();
        assertThat(fp8.linearMethod("model.layers.0.mlp.gate").quantized()).isFalse();
        assertThat(fp8.linearMethod("model.layers.0.mlp.gate_proj").quantized()).isFalse();
        assertThat(fp8.linearMethod("model.layers.1.mlp.gate_proj").quantized()).isTrue();
        assertThat(fp8.linearMethod("model.layers.1.self_attn.kv_b_proj").quantized()).isFalse();
        assertThat(fp8.linearMethod("model.layers.1.self_attn.kv_a_proj_with_mqa").scheme().name())
                .isEqualTo("fp8 (128x128 block weights, dynamic group-128 activations)");
    }
}
