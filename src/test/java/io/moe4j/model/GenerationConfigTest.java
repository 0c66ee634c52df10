package io.moe4j.model;

import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** generation_config.json as the hub ships it, and the fallback on config.json. */
class GenerationConfigTest {

    @Test
    void readsEosListAndSamplingDefaults(@TempDir Path dir) throws IOException {
        // the shape of Qwen3-30B-A3B's file
        Files.writeString(dir.resolve("generation_config.json"), """
                {"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643], "pad_token_id": 151643,
                 "temperature": 0.6, "top_k": 20, "top_p": 0.95, "transformers_version": "4.51.0"}""");
        Files.writeString(dir.resolve("config.json"), "{\"eos_token_id\": 151645}");
        GenerationConfig g = GenerationConfig.load(dir);
        assertThat(g.eosTokenIds()).containsExactly(151645, 151643);
        assertThat(g.bosTokenId()).isEqualTo(151643);
        assertThat(g.padTokenId()).isEqualTo(151643);
        assertThat(g.doSample()).isTrue();
        assertThat(g.temperature()).isEqualTo(0.6);
        assertThat(g.topK()).isEqualTo(20);
        assertThat(g.topP()).isEqualTo(0.95);
        assertThat(g.minP()).isNull();
        assertThat(g.maxNewTokens()).isNull();
    }

    @Test
    void withoutTheFileTokenIdsComeFromConfigJson() {
        GenerationConfig g = GenerationConfig.load(ModelCases.root().resolve("m_gptoss_mxfp4"));
        assertThat(g.eosTokenIds()).containsExactly(2);
        assertThat(g.bosTokenId()).isEqualTo(1);
        assertThat(g.doSample()).isFalse();
        assertThat(g.temperature()).isNull();
    }

    @Test
    void aMultimodalConfigGivesItsTextConfigsIds(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("config.json"), "{\"text_config\": {\"eos_token_id\": [200001, 200007]}}");
        assertThat(GenerationConfig.load(dir).eosTokenIds()).containsExactly(200001, 200007);
    }

    @Test
    void aBadEosIdIsNamed(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("generation_config.json"), "{\"eos_token_id\": [\"</s>\"]}");
        assertThatThrownBy(() -> GenerationConfig.load(dir)).isInstanceOf(MoeException.class)
                .hasMessageContaining("generation_config.json").hasMessageContaining("eos_token_id");
    }

    @Test
    void aFileThatIsNotJsonIsNamed(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("generation_config.json"), "{eos");
        assertThatThrownBy(() -> GenerationConfig.load(dir)).isInstanceOf(MoeException.class)
                .hasMessageContaining("generation_config.json").hasMessageContaining("not valid JSON");
    }
}
