package io.moe4j.backend.cuda.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaException;
import io.moe4j.backend.cuda.driver.LibraryCandidate;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Locating and loading NCCL, and the calls that need no GPU: these run on every machine. */
class NcclLibraryTest {

    @Test
    void explicitLibraryThatDoesNotExistIsReportedNotReplaced() {
        NcclLocator locator = new NcclLocator(Map.of(), Optional.of("/nonexistent/moe4j/libnccl.so.2"), Optional.empty());

        assertThat(locator.candidates()).hasSize(1);
        assertThatThrownBy(() -> Nccl.load(locator))
                .isInstanceOf(NcclException.class)
                .isInstanceOf(CudaException.class)
                .hasMessageContaining("NCCL (libnccl.so.2) not found")
                .hasMessageContaining("/nonexistent/moe4j/libnccl.so.2")
                .hasMessageContaining("moe4j.cuda.nccl")
                .hasMessageContaining("MOE4J_NCCL");
    }

    @Test
    void aFileThatIsNotALibraryIsRefusedWithTheLoadersReason(@TempDir Path dir) throws IOException {
        Path fake = Files.writeString(dir.resolve("libnccl.so.2"), "not a library");
        NcclLocator locator = new NcclLocator(Map.of(), Optional.of(fake.toString()), Optional.empty());

        assertThatThrownBy(() -> Nccl.load(locator)).isInstanceOf(NcclException.class)
                .hasMessageContaining(fake.toString());
    }

    @Test
    void locatorLooksInNcclHomeTheLoaderPathAndPythonEnvironments(@TempDir Path dir) throws IOException {
        Path home = Files.createDirectories(dir.resolve("nccl/lib"));
        Path ld = Files.createDirectories(dir.resolve("ld"));
        Path venvLib = Files.createDirectories(dir.resolve("venv/lib/python3.12/site-packages/nvidia/nccl/lib"));
        Path userLib = Files.createDirectories(dir.resolve("user/.local/lib/python3.11/site-packages/nvidia/nccl/lib"));
        for (Path p : new Path[] {home, ld, venvLib, userLib}) {
            Files.writeString(p.resolve("libnccl.so.2"), "x");
        }
        Files.writeString(ld.resolve("libnccl.so.1"), "an older ABI, never taken");
        NcclLocator locator = new NcclLocator(Map.of("NCCL_HOME", dir.resolve("nccl").toString(),
                "LD_LIBRARY_PATH", ld + ":", "VIRTUAL_ENV", dir.resolve("venv").toString()), Optional.empty(),
                Optional.of(dir.resolve("user").toString()));

        assertThat(locator.candidates()).map(LibraryCandidate::describe)
                .containsSubsequence(home.resolve("libnccl.so.2").toString(), ld.resolve("libnccl.so.2").toString(),
                        venvLib.resolve("libnccl.so.2").toString(), userLib.resolve("libnccl.so.2").toString(),
                        "libnccl.so.2 (loader search)")
                .noneMatch(d -> d.endsWith("libnccl.so.1"));
        assertThat(locator.candidates().getLast().path()).isEmpty();
    }

    @Test
    void uniqueIdRoundTripsAsTextAndRefusesWrongSizes() {
        byte[] bytes = new byte[NcclUniqueId.BYTES];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 7 + 3);
        }
        NcclUniqueId id = new NcclUniqueId(bytes);
        assertThat(NcclUniqueId.fromHex(id.toHex())).isEqualTo(id);
        assertThat(id.toHex()).hasSize(256);
        assertThatThrownBy(() -> new NcclUniqueId(new byte[127])).hasMessageContaining("128 bytes, got 127");
        assertThatThrownBy(() -> NcclUniqueId.fromHex("zz")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not an NCCL unique id");
    }

    /** With the library present (no GPU needed): the version, NCCL's error texts, fresh unique ids. */
    @Test
    void loadedLibraryAnswersVersionErrorsAndIds() {
        NcclProbe probe = Nccl.probe();
        assumeTrue(probe.available(), () -> "NCCL not available: " + probe.reason());
        Nccl nccl = probe.nccl().orElseThrow();

        assertThat(nccl.version()).isGreaterThanOrEqualTo(20000).isLessThan(30000);
        assertThat(nccl.versionString()).matches("2\\.\\d+\\.\\d+");
        assertThat(probe.reason()).contains(nccl.versionString()).contains("libnccl.so.2");
        assertThat(nccl.errorString(4)).containsIgnoringCase("invalid argument");
        assertThat(nccl.describe(4)).startsWith("ncclInvalidArgument (");
        assertThat(nccl.describe(99)).startsWith("ncclResult_t 99");
        assertThatThrownBy(() -> nccl.check("ncclSend", 5)).isInstanceOf(NcclException.class)
                .hasMessageStartingWith("ncclSend failed: ncclInvalidUsage (")
                .satisfies(e -> assertThat(((NcclException) e).code()).isEqualTo(5));
        NcclUniqueId a = nccl.uniqueId();
        NcclUniqueId b = nccl.uniqueId();
        assertThat(a).isNotEqualTo(b);
        assertThat(a.bytes()).hasSize(128);
    }
}
