package io.moe4j.backend.oracle;

import io.moe4j.cli.BackendsCommand;
import io.moe4j.cli.MoeCommand;
import io.moe4j.conformance.ConformanceCases;
import io.moe4j.config.ModelConfig;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.WeightFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static io.moe4j.backend.oracle.FakeBackends.problem;
import static io.moe4j.backend.oracle.FakeBackends.scheme;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code moe backends}: the report, and the checkpoint's layers as oracle problems. */
class BackendsCommandTest {

    static final String GPT_OSS = """
            {"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 3,
             "num_local_experts": 32, "experts_per_token": 4, "swiglu_limit": 7.0,
             "quantization_config": {"quant_method": "mxfp4"}}""";

    static Path checkpoint(Path dir, String json) throws IOException {
        Files.writeString(dir.resolve("config.json"), json);
        return dir;
    }

    @Test
    void reportsEachSchemeWithEveryBackendAndTheChoice() {
        StringWriter sw = new StringWriter();
        List<BackendsCommand.LayerGroup> groups = List.of(
                new BackendsCommand.LayerGroup(List.of(0, 1, 2),
                        problem(scheme("quark w_mxfp4", WeightFormat.MXFP4, ActivationFormat.NONE), 2880, 2880, 32, 4)),
                new BackendsCommand.LayerGroup(List.of(3),
                        problem(scheme("quark w_mxfp6_e3m2_a_mxfp6_e3m2", WeightFormat.MXFP6_E3M2,
                                ActivationFormat.MXFP6_E3M2), 2048, 768, 128, 8)));
        int rc = BackendsCommand.report(FakeBackends.H100, "h100", BackendChoice.parse("marlin"), FakeBackends.oracle(),
                groups, new PrintWriter(sw));
        assertThat(rc).isEqualTo(1);
        assertThat(sw.toString()).isEqualTo("""
                platform (POSED as h100, not this machine):
                  CPU: 16 cores; Vector API: 512-bit preferred species; CPU features: avx512f avx2 fma
                  CUDA: 1 device; device 0: NVIDIA H100 80GB HBM3 (posed: h100), compute capability 9.0, 79.2 GiB
                backends:
                  emulation  exact float64 reference on dequantized weights (any scheme, any machine; slow)
                  cpu        fake Vector API backend
                  cuda       fake CUDA backend
                choice: marlin (moe4j: cuda)

                layers 0-2 (3): quark w_mxfp4 [H 2880, I 2880, 32 experts, top-4]
                  cuda       supported    MXFP4 kernels on NVIDIA H100 80GB HBM3 (posed: h100)
                  cpu        supported    512-bit Vector API kernels for MXFP4 weights
                  emulation  supported    runs every scheme exactly in Java, on any machine
                  → cuda (bf16 activations): forced by --backend marlin (moe4j: cuda): MXFP4 kernels on NVIDIA H100 80GB HBM3 (posed: h100)
                    sizes H 2880→3072, I 2880→2944; layout cuda-marlin-mxfp4

                layer 3: quark w_mxfp6_e3m2_a_mxfp6_e3m2 [H 2048, I 768, 128 experts, top-8]
                  cuda       unsupported  no CUDA kernel for MXFP6_E3M2 weights
                  cpu        unsupported  no Vector API kernel for MXFP6_E3M2 weights
                  emulation  supported    runs every scheme exactly in Java, on any machine
                  → no backend: backend marlin (moe4j: cuda) cannot run quark w_mxfp6_e3m2_a_mxfp6_e3m2 here: no CUDA kernel for MXFP6_E3M2 weights; backends that can: emulation
                """);
    }

    @Test
    void readsTheLayersOfAnMxfp4Checkpoint(@TempDir Path dir) throws IOException {
        List<BackendsCommand.LayerProblem> layers = BackendsCommand.layerProblems(ModelConfig.load(checkpoint(dir, GPT_OSS)));
        assertThat(layers).extracting(BackendsCommand.LayerProblem::layer).containsExactly(0, 1, 2);
        var p = layers.getFirst().problem();
        assertThat(p.scheme().weights()).isEqualTo(WeightFormat.MXFP4);
        assertThat(p.scheme().activations()).isEqualTo(ActivationFormat.NONE);
        assertThat(List.of(p.hidden(), p.intermediate(), p.numExperts(), p.topK())).containsExactly(2880, 2880, 32, 4);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
            "mixtral_bf16, BF16, NONE, 1",
            "qwen3_bf16_norm, BF16, NONE, 1",
            "deepseek_bf16_grouped, BF16, NONE, 1",
            "llama4_bf16_top1, BF16, NONE, 1",
            "gptoss_bf16, BF16, NONE, 1",
            "gptoss_mxfp4, MXFP4, NONE, 1"})
    void readsTheConformanceCheckpoints(String name, WeightFormat w, ActivationFormat a, int layers) {
        var config = ModelConfig.load(ConformanceCases.dir(name));
        List<BackendsCommand.LayerProblem> problems = BackendsCommand.layerProblems(config);
        assertThat(problems).hasSize(layers);
        var p = problems.getFirst().problem();
        assertThat(p.scheme().weights()).isEqualTo(w);
        assertThat(p.scheme().activations()).isEqualTo(a);
        assertThat(p.hidden()).isEqualTo(config.hiddenSize());
        // The standard oracle always has an answer for a loadable layer, on any platform kind.
        for (var platform : List.of(FakeBackends.H100, FakeBackends.CPU, FakeBackends.CPU_NOVECTOR)) {
            assertThat(Oracle.standard().select(p, platform, BackendChoice.auto()).considered().getLast().backendName())
                    .isEqualTo("emulation");
        }
    }

    @Test
    @ResourceLock("system-out")
    void aModelItCannotReadStillShowsThePlatform(@TempDir Path dir) throws IOException {
        Path ckpt = checkpoint(dir, GPT_OSS.replace("\"mxfp4\"", "\"gguf\""));
        Run r = moe("backends", "--model", ckpt.toString(), "--platform", "cpu");
        assertThat(r.rc()).isEqualTo(1);
        assertThat(r.out()).startsWith("platform (POSED as cpu, not this machine):\n")
                .contains("\nbackends:\n")
                .endsWith("quantization_config quant_method 'gguf' is not supported (supported: quark, "
                        + "compressed-tensors, mxfp4, fp8, or no quantization_config)\n");
    }

    record Run(int rc, String out) {
    }

    static Run moe(String... args) {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
            int rc = MoeCommand.execute(args);
            return new Run(rc, buf.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
        }
    }

    @Test
    @ResourceLock("system-out")
    void runsFromTheCommandLine(@TempDir Path dir) throws IOException {
        Path ckpt = checkpoint(dir, GPT_OSS);
        Run r = moe("backends", "--model", ckpt.toString(), "--platform", "cpu-novector", "--backend", "emulation");
        assertThat(r.rc()).isZero();
        assertThat(r.out()).startsWith("platform (POSED as cpu-novector, not this machine):\n")
                .contains("Vector API: not available")
                .contains("layers 0-2 (3): gpt-oss mxfp4 [H 2880, I 2880, 32 experts, top-4]\n")
                .contains("  → emulation (bf16 activations): forced by --backend emulation: ");
    }
}
