package io.moe4j.cli;

import io.moe4j.bench.model.ModelBench;
import io.moe4j.bench.model.ModelPreset;
import io.moe4j.bench.model.ModelShape;
import io.moe4j.config.ModelConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code moe bench --model-preset P --write-only}: the synthetic model written (or reused), nothing timed. */
class ModelBenchWriteOnlyTest {

    @Test
    void writesTheModelOnceAndReusesIt(@TempDir Path tmp) throws Exception {
        ModelShape tiny = new ModelShape(ModelShape.Family.GPT_OSS, 64, 2, 24, 4, 2, 16, 8, 32, 4, 64, 0, 300, 8, 0,
                0, null);
        ModelBenchRun run = new ModelBenchRun(ModelPreset.GPT_OSS_20B, tiny, "cpu", 1, new ModelBench(1, 1, 1, 1),
                tmp, 1L << 30, 8L << 20, true);
        Path dir = run.write();
        assertThat(dir).isEqualTo(tmp.resolve("gpt-oss-20b-2L-8E"));
        ModelConfig config = ModelConfig.load(dir);
        assertThat(config.numLayers()).isEqualTo(2);
        assertThat(config.hiddenSize()).isEqualTo(64);
        assertThat(dir.resolve("model.safetensors.index.json")).isRegularFile();
        FileTime written = Files.getLastModifiedTime(dir.resolve("config.json"));
        Thread.sleep(20);
        assertThat(run.write()).isEqualTo(dir);
        assertThat(Files.getLastModifiedTime(dir.resolve("config.json"))).isEqualTo(written);
    }

    @Test
    void writeOnlyTakesAnyBackendButStillChecksTheShape() {
        // Without --write-only a cuda backend is refused first; with it, the shape check is what fails.
        CliTest.Run cuda = CliTest.moe("bench", "--model-preset", "gpt-oss-20b", "--layers", "25", "--write-only",
                "--backend", "cuda");
        assertThat(cuda.exit()).isEqualTo(1);
        assertThat(cuda.err()).contains("--layers 25").doesNotContain("not 'cuda'");
        CliTest.Run preset = CliTest.moe("bench", "--model-preset", "gpt-5", "--write-only");
        assertThat(preset.exit()).isEqualTo(1);
        assertThat(preset.err()).contains("unknown model preset 'gpt-5'");
    }

    /** A whole-model option without --model-preset is refused before anything is measured, not silently ignored. */
    @Test
    void writeOnlyWithoutAModelPresetIsRefused(@TempDir Path tmp) {
        CliTest.Run r = CliTest.moe("bench", "--write-only");
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("moe: ").contains("--write-only").contains("--model-preset")
                .doesNotContain("\n");
        assertThat(r.out() + r.err()).doesNotContain("measuring");
        CliTest.Run several = CliTest.moe("bench", "--cache-dir", tmp.toString(), "--layers", "2");
        assertThat(several.exit()).isEqualTo(1);
        assertThat(several.err()).contains("--layers, --cache-dir apply only with --model-preset");
        assertThat(tmp).isEmptyDirectory();
    }
}
