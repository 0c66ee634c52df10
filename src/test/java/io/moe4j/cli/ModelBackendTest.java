package io.moe4j.cli;

import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.Platform;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code --backend auto}: the GPU where one is usable and holds the checkpoint, else the cpu, with the reason. */
class ModelBackendTest {
    @TempDir
    Path dir;

    private static Platform withGpu(long memoryBytes) {
        return new Platform(2, true, 256, "", new Platform.CudaInfo(true, "", 1, "NVIDIA H200", 90, memoryBytes));
    }

    private void checkpoint(long bytes) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("model.safetensors").toFile(), "rw")) {
            f.setLength(bytes);   // sparse: only its size is read
        }
    }

    @Test
    void aNamedBackendIsTakenAsNamed() {
        ModelBackend b = ModelBackend.choose("cpu", dir, 1, KernelActivations.FLOAT, withGpu(1L << 40));
        assertThat(b).isEqualTo(new ModelBackend("cpu", null, false));
        assertThat(b.described()).isEqualTo("cpu");
    }

    @Test
    void withoutAGpuAutoIsTheCpuAndSaysWhy() {
        ModelBackend b = ModelBackend.choose("auto", dir, 1, KernelActivations.FLOAT, Platform.cpuOnly(2, 256));
        assertThat(b.backend()).isEqualTo("cpu");
        assertThat(b.fallback()).isFalse();
        assertThat(b.described()).isEqualTo("cpu (auto: no CUDA driver (libcuda.so.1) found)");
    }

    @Test
    void aGpuThatHoldsTheCheckpointIsChosenAndMayFallBack() throws IOException {
        checkpoint(3_000_000_000L);
        ModelBackend b = ModelBackend.choose("auto", dir, 1, KernelActivations.FLOAT, withGpu(80_000_000_000L));
        assertThat(b).isEqualTo(new ModelBackend("cuda", "NVIDIA H200", true));
    }

    @Test
    void aCheckpointLargerThanTheGpuStaysOnTheCpu() throws IOException {
        checkpoint(9_500_000_000L);
        ModelBackend b = ModelBackend.choose("auto", dir, 1, KernelActivations.FLOAT, withGpu(10_000_000_000L));
        assertThat(b.backend()).isEqualTo("cpu");
        assertThat(b.reason()).isEqualTo("the checkpoint's 9.5 GB do not fit the NVIDIA H200's 10.0 GB");
    }

    @Test
    void severalGpusOrInt8KernelsDecideIt() {
        assertThat(ModelBackend.choose("auto", dir, 2, KernelActivations.FLOAT, withGpu(1L << 40)))
                .isEqualTo(new ModelBackend("cuda", "--gpus 2", false));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ModelBackend.choose("auto", dir, 2,
                        KernelActivations.FLOAT, Platform.cpuOnly(2, 256)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("--gpus 2 spreads experts over CUDA")
                .hasMessageContaining("no CUDA driver");
        assertThat(ModelBackend.choose("auto", dir, 1, KernelActivations.INT8, withGpu(1L << 40)).backend())
                .isEqualTo("cpu");
    }

    /**
     * Auto's GPU that cannot load the model (here: a GPU posed on a machine without a CUDA driver) is said on
     * stderr, and the model loads on the cpu; a named cuda would have failed.
     */
    @Test
    void aFailedDeviceLoadUnderAutoGoesOnToTheCpu() {
        Path model = io.moe4j.testing.RandomModels.qwen3(dir.resolve("qwen3"), 5);
        ModelArgs args = new ModelArgs();
        args.model = model;
        args.backend = "auto";
        args.threads = 2;
        args.activations = new ActivationsArg();
        args.activations.activations = "float";
        args.gpus = 1;
        args.noWarmup = true;
        args.platform = withGpu(80_000_000_000L);
        org.junit.jupiter.api.Assumptions.assumeFalse(io.moe4j.backend.PlatformProbe.probeReal().cuda().available(),
                "a real GPU would load it");
        java.io.PrintStream oldErr = System.err;
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
        try (io.moe4j.generate.MoeModel m = args.load()) {
            assertThat(m.model().options().backend()).isEqualTo("cpu");
        } finally {
            System.setErr(oldErr);
        }
        String said = err.toString(java.nio.charset.StandardCharsets.UTF_8);
        assertThat(said).contains("moe: cuda cannot run qwen3 (").contains("loading on cpu")
                .contains("on cpu (auto: cuda could not load it)");
    }

    /** On a machine with a usable GPU (skipped elsewhere), auto loads a model that fits it on cuda. */
    @Test
    void aRealGpuIsChosenByAuto() {
        io.moe4j.backend.cuda.driver.CudaProbe probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
        org.junit.jupiter.api.Assumptions.assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
        ModelArgs args = new ModelArgs();
        args.model = io.moe4j.testing.RandomModels.qwen3(dir.resolve("qwen3"), 5);
        args.backend = "auto";
        args.threads = 2;
        args.activations = new ActivationsArg();
        args.activations.activations = "float";
        args.gpus = 1;
        try (io.moe4j.generate.MoeModel m = args.load()) {
            assertThat(m.model().options().backend()).isEqualTo("cuda");
        }
    }

    /** A whole model's MoE layers say that the model named their backend, not a --backend nobody gave. */
    @Test
    void theLayersSayTheModelChoseTheirBackend() {
        java.util.logging.Logger log = java.util.logging.Logger.getLogger("io.moe4j.layer.MoeLayer");
        java.util.List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                lines.add(new java.util.logging.SimpleFormatter().formatMessage(r));
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(capture);
        try (io.moe4j.generate.MoeModel m = io.moe4j.generate.MoeModel.load(
                io.moe4j.testing.RandomModels.qwen3(dir.resolve("qwen3"), 5),
                io.moe4j.model.ModelOptions.defaults().withThreads(2))) {
            assertThat(lines).isNotEmpty().filteredOn(l -> l.contains("MoE backend"))
                    .allSatisfy(l -> assertThat(l).contains("forced by the whole model's backend cpu: ")
                            .doesNotContain("--backend"));
        } finally {
            log.removeHandler(capture);
        }
    }
}
