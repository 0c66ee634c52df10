package io.moe4j.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.config.ModelConfig;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The decoder each fixture's config.json describes, layer by layer, and the keys as transformers v5 saves them. */
class DecoderConfigTest {
    static final ObjectMapper JSON = new ObjectMapper();

    static DecoderConfig of(String fixture) {
        return DecoderConfig.of(ModelConfig.load(ModelCases.root().resolve(fixture)));
    }

    static DecoderConfig parse(ObjectNode json) {
        return DecoderConfig.of(ModelConfig.parse(Path.of("config.json"), json));
    }

    @Test
    void gptOssAlternatesSlidingAndFullLayersWithSinksBiasesAndYarn() {
        DecoderConfig c = of("m_gptoss_mxfp4");
        GqaSpec sliding = (GqaSpec) c.layers().get(0).attention();
        GqaSpec full = (GqaSpec) c.layers().get(1).attention();
        assertThat(sliding.window()).isEqualTo(AttentionWindow.sliding(8));
        assertThat(full.window()).isEqualTo(AttentionWindow.FULL);
        assertThat(sliding.sinks()).isTrue();
        assertThat(sliding.bias()).isTrue();
        assertThat(sliding.rope().interleaved()).isFalse();
        assertThat((double) sliding.rope().attentionFactor()).isCloseTo(0.1 * Math.log(32) + 1, within(1e-6));
        assertThat(c.layers()).allMatch(LayerSpec::isMoe);
    }

    @Test
    void llama4ChunksRopeLayersAndTunesTheTemperatureOfItsNopeLayer() {
        DecoderConfig c = of("m_llama4_bf16");
        for (int l = 0; l < 3; l++) {
            GqaSpec a = (GqaSpec) c.layers().get(l).attention();
            assertThat(a.window()).isEqualTo(AttentionWindow.chunked(8));
            assertThat(a.rope()).isNotNull();
            assertThat(a.rope().interleaved()).isTrue();
            assertThat(a.qkNorm()).isEqualTo(GqaSpec.QkNorm.L2);
            assertThat(a.temperature()).isNull();
        }
        GqaSpec nope = (GqaSpec) c.layers().get(3).attention();
        assertThat(nope.rope()).isNull();
        assertThat(nope.window()).isEqualTo(AttentionWindow.FULL);
        assertThat(nope.qkNorm()).isEqualTo(GqaSpec.QkNorm.NONE);
        assertThat(nope.temperature()).isEqualTo(new GqaSpec.TemperatureTuning(4, 0.1));
        // floor((p + 1) / 4) is 0 below position 3: no scaling there
        assertThat(nope.temperature().factor(2)).isEqualTo(1f);
        assertThat((double) nope.temperature().factor(7)).isCloseTo(Math.log(3) * 0.1 + 1, within(1e-6));
    }

    @Test
    void deepseekHasADenseFirstLayerAndLatentAttentionScaledByYarnsMscale() {
        DecoderConfig c = of("m_deepseek_ct_fp8_block");
        assertThat(c.layers().get(0).isMoe()).isFalse();
        assertThat(c.layers().get(0).denseMlp()).isEqualTo(new LayerSpec.DenseMlpSpec("model.layers.0.mlp", 384));
        assertThat(c.layers().get(1).isMoe()).isTrue();
        MlaSpec mla = (MlaSpec) c.layers().get(1).attention();
        assertThat(mla.qLoraRank()).isEqualTo(128);
        assertThat(mla.rope().dim()).isEqualTo(32);
        assertThat(mla.rope().interleaved()).isTrue();
        double mscale = 0.1 * Math.log(40) + 1;
        assertThat((double) mla.scale()).isCloseTo(mscale * mscale / Math.sqrt(96), within(1e-6));
        assertThat((double) mla.rope().attentionFactor()).isCloseTo(1.0, within(1e-7));
    }

    @Test
    void qwen3NormsQueriesAndKeysPerHead() {
        GqaSpec a = (GqaSpec) of("m_qwen3_ct_nvfp4").layers().get(0).attention();
        assertThat(a.qkNorm()).isEqualTo(GqaSpec.QkNorm.RMS);
        assertThat(a.window()).isEqualTo(AttentionWindow.FULL);
        assertThat(a.headDim()).isEqualTo(32);
    }

    @Test
    void aQwen3ConfigAsTransformersV5SavesItParses() throws IOException {
        ObjectNode json = (ObjectNode) JSON.readTree(ModelCases.root().resolve("m_qwen3_ct_w4a16_g128/config.json").toFile());
        json.remove("quantization_config");
        json.set("num_local_experts", json.remove("num_experts"));
        json.remove("rope_theta");
        json.remove("rope_scaling");
        json.putObject("rope_parameters").put("rope_type", "default").put("rope_theta", 1000000.0);
        json.put("use_sliding_window", true).put("sliding_window", 4).putArray("mlp_only_layers").add(1);
        DecoderConfig c = parse(json);
        assertThat(c.layers().get(0).isMoe()).isTrue();
        assertThat(c.layers().get(1).denseMlp()).isEqualTo(new LayerSpec.DenseMlpSpec("model.layers.1.mlp", 384));
        GqaSpec a = (GqaSpec) c.layers().get(0).attention();
        assertThat(a.window()).isEqualTo(AttentionWindow.sliding(4));
        assertThat((double) a.rope().invFreq()[1]).isCloseTo(Math.pow(1e6, -2.0 / 32), within(1e-7));
        assertThat(c.model().layer(0).numExperts()).isEqualTo(16);
    }

    @Test
    void mixtralSlidesEveryLayerWhenItsConfigSetsAWindow() throws IOException {
        ObjectNode json = (ObjectNode) JSON.readTree(ModelCases.root().resolve("m_mixtral_ct_fp8_tensor/config.json").toFile());
        json.put("sliding_window", 4096);
        assertThat(parse(json).layers()).allMatch(l -> ((GqaSpec) l.attention()).window().equals(AttentionWindow.sliding(4096)));
    }

    @Test
    void aNormEpsilonOfZeroOrLessIsRefusedByName() throws IOException {
        for (double eps : new double[] {0, -1}) {
            ObjectNode json = (ObjectNode) JSON.readTree(ModelCases.root().resolve("m_qwen3_hf_fp8_block/config.json").toFile());
            json.put("rms_norm_eps", eps);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> parse(json))
                    .isInstanceOf(io.moe4j.MoeException.class).hasMessageContaining("config.json")
                    .hasMessageContaining("rms_norm_eps must be a positive number");
        }
    }

    static org.assertj.core.data.Offset<Double> within(double d) {
        return org.assertj.core.data.Offset.offset(d);
    }
}
