package io.moe4j.backend.cuda.driver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Probing and library location: these run on every machine, with or without a GPU. */
class CudaProbeTest {

    @Test
    void missingDriverLibraryIsUnavailableWithTheLibraryNamed() {
        CudaProbe probe = CudaRuntime.probe("libcuda-moe4j-absent.so.1", null);

        assertThat(probe.available()).isFalse();
        assertThat(probe.reason()).contains("libcuda-moe4j-absent.so.1").contains("not found");
        assertThat(probe.device()).isEmpty();
        assertThat(probe.nvrtcLibrary()).isEmpty();
    }

    @Test
    void realProbeAnswersWithoutThrowingAndExplainsItself() {
        CudaProbe probe = CudaRuntime.probe();

        assertThat(probe.reason()).isNotBlank();
        if (probe.available()) {
            assertThat(probe.device()).isPresent();
            assertThat(probe.device().get().computeCapability()).isPositive();
            assertThat(probe.nvrtcLibrary()).isPresent();
        } else {
            assertThat(probe.nvrtcLibrary()).isEmpty();
        }
        // Asking twice gives the same answer (cached per process, so backends agree on it).
        assertThat(CudaRuntime.probe()).isSameAs(probe);
    }

    @Test
    void explicitNvrtcPathThatDoesNotExistIsReportedNotReplaced() {
        NvrtcLocator locator = new NvrtcLocator(Map.of(), Optional.of("/nonexistent/moe4j/libnvrtc.so.99"));

        assertThat(locator.candidates()).hasSize(1);
        assertThatThrownBy(() -> Nvrtc.load(locator))
                .isInstanceOf(CudaException.class)
                .hasMessageContaining("/nonexistent/moe4j/libnvrtc.so.99")
                .hasMessageContaining("moe4j.cuda.nvrtc");
    }

    @Test
    void locatorPrefersTheNewestNvrtcAndIgnoresBuiltinsAndAlt(@TempDir Path dir) throws IOException {
        for (String name : new String[] {"libnvrtc.so", "libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so.9",
                "libnvrtc-builtins.so.14", "libnvrtc.alt.so.14", "libnvrtc.so.13.bak"}) {
            Files.writeString(dir.resolve(name), "not a library");
        }

        assertThat(NvrtcLocator.newestIn(dir)).contains(dir.resolve("libnvrtc.so.13"));
    }

    @Test
    void locatorSearchesLdLibraryPathAndCudaHome(@TempDir Path dir) throws IOException {
        Path cudaHome = Files.createDirectories(dir.resolve("cuda/lib64"));
        Path ld = Files.createDirectories(dir.resolve("ld"));
        Files.writeString(ld.resolve("libnvrtc.so.13"), "x");
        NvrtcLocator locator = new NvrtcLocator(Map.of("CUDA_HOME", dir.resolve("cuda").toString(),
                "LD_LIBRARY_PATH", ld + ":"), Optional.empty());

        assertThat(locator.searchDirectories()).contains(cudaHome, ld);
        assertThat(locator.candidates()).extracting(LibraryCandidate::describe)
                .contains(ld.resolve("libnvrtc.so.13").toString())
                .endsWith("libnvrtc.so (loader search)");
    }

    @Test
    void locatorFindsPipWheelsInTheVirtualEnvironmentAndTheUserSitePackages(@TempDir Path dir) throws IOException {
        Path venv = Files.createDirectories(dir.resolve("venv/lib/python3.12/site-packages/nvidia/cu13/lib"));
        Path user = Files.createDirectories(dir.resolve("user/.local/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib"));
        Files.writeString(venv.resolve("libnvrtc.so.13"), "x");
        Files.writeString(user.resolve("libnvrtc.so.12"), "x");
        NvrtcLocator locator = new NvrtcLocator(Map.of("VIRTUAL_ENV", dir.resolve("venv").toString()),
                Optional.empty(), Optional.of(dir.resolve("user").toString()));

        assertThat(locator.searchDirectories()).containsSubsequence(venv, user);
        assertThat(locator.candidates()).map(LibraryCandidate::describe)
                .containsSubsequence(venv.resolve("libnvrtc.so.13").toString(),
                        user.resolve("libnvrtc.so.12").toString(), "libnvrtc.so.13 (loader search)");
    }
}
