package io.moe4j.conformance;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The in-repo copy of the fixtures is byte-identical to what SHA256SUMS lists, and current with ../shared. */
class FixtureIntegrityTest {

    @Test
    void everyListedFileMatchesItsChecksum() throws Exception {
        Path root = ConformanceCases.root();
        List<String> lines = Files.readAllLines(root.resolve("SHA256SUMS"));
        assertThat(lines).isNotEmpty();
        for (String line : lines) {
            String[] parts = line.trim().split("\\s+", 2);
            Path file = root.resolve(parts[1]);
            assertThat(file).as("listed fixture %s", parts[1]).exists();
            assertThat(sha256(file)).as("checksum of %s", parts[1]).isEqualTo(parts[0]);
        }
    }

    @Test
    void copyIsCurrentWithSharedFolder() throws IOException {
        Path shared = ConformanceCases.shared().resolve("conformance/SHA256SUMS");
        assumeTrue(Files.isRegularFile(shared), "no ../shared beside the repository");
        assertThat(Files.readString(ConformanceCases.root().resolve("SHA256SUMS")))
                .as("src/test/resources/conformance is stale: copy ../shared/conformance again")
                .isEqualTo(Files.readString(shared));
    }

    private static String sha256(Path file) throws IOException, NoSuchAlgorithmException {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) {
                md.update(buf, 0, n);
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }
}
