package io.moe4j.quant;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.quant.method.UnquantizedMethod;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class QuantizationConfigTest {
    static final ObjectMapper JSON = new ObjectMapper();

    /** A case's config.json with its quantization_config replaced (null removes it). */
    static ModelConfig withQuantization(String caseName, String quantizationJson) throws Exception {
        Path dir = Cases.dir(caseName);
        ObjectNode root = (ObjectNode) JSON.readTree(dir.resolve("config.json").toFile());
        if (quantizationJson == null) {
            root.remove("quantization_config");
        } else {
            root.set("quantization_config", JSON.readTree(quantizationJson));
        }
        return ModelConfig.parse(dir.resolve("config.json"), root);
    }

    static MoeLayerConfig layer0(ModelConfig m) {
        return m.layer(m.moeLayers().get(0));
    }

    @Test
    void absentConfigIsUnquantizedWithTheDeclaredDtype() throws Exception {
        ModelConfig m = withQuantization("mixtral_bf16", null);
        QuantizationConfig q = QuantizationConfig.of(m);
        assertThat(q.quantMethod()).isEqualTo("none");
        QuantMethod method = q.methodFor(layer0(m));
        assertThat(method).isInstanceOf(UnquantizedMethod.class);
        assertThat(method.scheme().weights()).isEqualTo(WeightFormat.BF16);
        assertThat(method.expectedTensors(layer0(m))).hasSize(8 * 3);
    }

    @Test
    void unknownQuantMethodIsNamedWithTheSupportedOnes() throws Exception {
        ModelConfig m = withQuantization("mixtral_bf16", "{\"quant_method\": \"awq\", \"bits\": 4}");
        assertThatThrownBy(() -> QuantizationConfig.of(m))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("quant_method 'awq' is not supported")
                .hasMessageContaining("quark, compressed-tensors, mxfp4");
    }

    @Test
    void quarkExcludeGlobLeavesExpertsUnquantized() throws Exception {
        ModelConfig m = withQuantization("qwen3_quark_w_mxfp4", """
                {"quant_method": "quark", "export": {}, "global_quant_config": {"weight": {"dtype": "fp4",
                 "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}},
                 "exclude": ["lm_head", "*mlp.experts.*"]}""");
        assertThat(QuantizationConfig.of(m).methodFor(layer0(m))).isInstanceOf(UnquantizedMethod.class);
    }

    @Test
    void quarkExcludeRegexLeavesExpertsUnquantized() throws Exception {
        ModelConfig m = withQuantization("qwen3_quark_w_mxfp4", """
                {"quant_method": "quark", "export": {}, "global_quant_config": {"weight": {"dtype": "fp4",
                 "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}},
                 "exclude": ["re:model\\\\.layers\\\\.0\\\\.mlp\\\\.experts\\\\..*"]}""");
        assertThat(QuantizationConfig.of(m).methodFor(layer0(m))).isInstanceOf(UnquantizedMethod.class);
    }

    @Test
    void quarkExcludingOnlySomeProjectionsIsRefused() throws Exception {
        ModelConfig m = withQuantization("qwen3_quark_w_mxfp4", """
                {"quant_method": "quark", "export": {}, "global_quant_config": {"weight": {"dtype": "fp4",
                 "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"}},
                 "exclude": ["*down_proj"]}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(layer0(m)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("requires all expert projections to use the same scheme");
    }

    @Test
    void quarkWithoutExportIsRefused() throws Exception {
        ModelConfig m = withQuantization("qwen3_quark_w_mxfp4", """
                {"quant_method": "quark", "global_quant_config": {}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("The export key should be included in the configurations of Quark quantized model");
    }

    @Test
    void compressedTensorsIgnoredExpertsAreUnquantized() throws Exception {
        ModelConfig m = withQuantization("qwen3_ct_fp8_channel", """
                {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {
                 "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                 "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}},
                 "ignore": ["lm_head", "re:.*mlp\\\\.experts.*"]}""");
        assertThat(QuantizationConfig.of(m).methodFor(layer0(m))).isInstanceOf(UnquantizedMethod.class);
    }

    @Test
    void compressedTensorsUntargetedExpertsAreUnquantized() throws Exception {
        ModelConfig m = withQuantization("qwen3_ct_fp8_channel", """
                {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {
                 "targets": ["re:.*self_attn.*"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                 "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}}}""");
        assertThat(QuantizationConfig.of(m).methodFor(layer0(m))).isInstanceOf(UnquantizedMethod.class);
    }

    @Test
    void compressedTensorsMixedSchemesAcrossProjectionsAreRefused() throws Exception {
        ModelConfig m = withQuantization("qwen3_ct_fp8_channel", """
                {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {
                 "a": {"targets": ["re:.*down_proj$"], "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"},
                  "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor"}},
                 "b": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                  "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(layer0(m)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("All MoE projections need to have same quantization scheme but found multiple");
    }

    @Test
    void mxfp4ModulesToNotConvertCoverTheExperts() throws Exception {
        ModelConfig m = withQuantization("gptoss_mxfp4", """
                {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.mlp.experts"]}""");
        assertThat(QuantizationConfig.of(m).methodFor(layer0(m))).isInstanceOf(UnquantizedMethod.class);
    }

    @Test
    void mxfp4OnAnotherFamilyIsRefused() throws Exception {
        ModelConfig m = withQuantization("mixtral_bf16", """
                {"quant_method": "mxfp4", "modules_to_not_convert": []}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(layer0(m)))
                .isInstanceOf(MoeException.class).hasMessageContaining("model_type 'mixtral' is not supported");
    }
}
