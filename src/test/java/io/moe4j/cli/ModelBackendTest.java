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
        assertThat(ModelBackend.choose("auto", dir, 2, KernelActivations.FLOAT, Platform.cpuOnly(2, 256)))
                .isEqualTo(new ModelBackend("cuda", "--gpus 2", false));
        assertThat(ModelBackend.choose("auto", dir, 1, KernelActivations.INT8, withGpu(1L << 40)).backend())
                .isEqualTo("cpu");
    }
}
