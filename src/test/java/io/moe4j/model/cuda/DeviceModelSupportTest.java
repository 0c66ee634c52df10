package io.moe4j.model.cuda;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.config.ModelConfig;
import io.moe4j.model.DecoderConfig;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the device decoder takes, decided from the config before anything touches a GPU (so it runs everywhere):
 * every family of the whole-model fixtures, and a refusal naming the layer and what is beyond the device attention.
 */
class DeviceModelSupportTest {
    private static Path fixtures() {
        return Path.of(System.getProperty("moe4j.shared", "../shared")).resolve("conformance-models");
    }

    @ParameterizedTest
    @ValueSource(strings = {"m_gptoss_mxfp4", "m_qwen3_ct_nvfp4", "m_mixtral_ct_fp8_tensor", "m_deepseek_ct_fp8_block",
            "m_llama4_bf16"})
    void everyFamilyIsTaken(String name) {
        DecoderConfig config = DecoderConfig.of(ModelConfig.load(fixtures().resolve(name)));
        assertThat(DeviceModel.unsupported(config)).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"m_qwen3_ct_nvfp4", "m_llama4_bf16"})
    void headsWiderThanTheDeviceAttentionAreRefusedByLayer(String name, @TempDir Path dir) throws IOException {
        DecoderConfig config = edited(name, dir, c -> c.put("head_dim", 512));
        assertThat(DeviceModel.unsupported(config)).hasValueSatisfying(why -> assertThat(why)
                .startsWith("layer 0 of ").contains("head_dim 512").contains("up to 256"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"m_deepseek_ct_fp8_block"})
    void latentsWiderThanTheDeviceAttentionAreRefused(String name, @TempDir Path dir) throws IOException {
        DecoderConfig config = edited(name, dir, c -> c.put("kv_lora_rank", 1024));
        assertThat(DeviceModel.unsupported(config)).hasValueSatisfying(why -> assertThat(why)
                .startsWith("layer 0 of ").contains("kv_lora_rank 1024").contains("up to 512"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"m_deepseek_ct_fp8_block"})
    void deepSeekV3sLatentAttentionIsTaken(String name, @TempDir Path dir) throws IOException {
        // DeepSeek-V3's latent attention sizes (its config.json on the hub)
        DecoderConfig config = edited(name, dir, c -> {
            c.put("kv_lora_rank", 512);
            c.put("qk_rope_head_dim", 64);
            c.put("qk_nope_head_dim", 128);
            c.put("v_head_dim", 128);
        });
        assertThat(DeviceModel.unsupported(config)).isEmpty();
    }

    /** The fixture's config.json with an edit, alone in {@code dir} (enough for the config's own checks). */
    private static DecoderConfig edited(String name, Path dir, Consumer<ObjectNode> edit) throws IOException {
        ObjectMapper json = new ObjectMapper();
        ObjectNode config = (ObjectNode) json.readTree(fixtures().resolve(name).resolve("config.json").toFile());
        edit.accept(config);
        json.writeValue(dir.resolve("config.json").toFile(), config);
        return DecoderConfig.of(ModelConfig.load(dir));
    }

    /**
     * On a GPU: the DeepSeek case's q_a_proj and kv_a_proj_with_mqa (FP8 blocks, one input rule) load as one stacked
     * linear, and as two with {@code -Dmoe4j.cuda.stackMlaInputs=false} (DeviceModelTest compares their logits).
     */
    @org.junit.jupiter.api.Test
    void deepSeeksQaAndKvaStackOnTheDevice() {
        io.moe4j.backend.cuda.driver.CudaProbe probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
        org.junit.jupiter.api.Assumptions.assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
        Path dir = fixtures().resolve("m_deepseek_ct_fp8_block");
        DecoderConfig config = DecoderConfig.of(ModelConfig.load(dir));
        for (String stack : new String[] {"true", "false"}) {
            io.moe4j.testing.SystemProperty.with("moe4j.cuda.stackMlaInputs", stack, () -> {
                try (io.moe4j.safetensors.Checkpoint checkpoint = io.moe4j.safetensors.Checkpoint.open(dir);
                        DeviceModel model = DeviceModel.load(config, checkpoint,
                                io.moe4j.model.ModelOptions.defaults().withBackend("cuda"), 256)) {
                    for (DeviceModel.Layer layer : model.layers()) {
                        DeviceModel.Mla mla = (DeviceModel.Mla) layer.attention();
                        assertThat(mla.qAkvA() != null).as("stacked, " + stack).isEqualTo(stack.equals("true"));
                        assertThat(mla.qA() == null && mla.kvA() == null).isEqualTo(stack.equals("true"));
                    }
                }
            });
        }
    }
}
