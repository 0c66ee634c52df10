package io.moe4j.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** Locates the shared conformance fixtures and compares arrays bit for bit, naming the first difference. */
final class Goldens {
    private Goldens() {}

    /**
     * The numerics goldens, from the project's checked copy of the conformance fixtures; fails (never skips) when
     * absent.
     */
    static Path numerics() {
        Path file = io.moe4j.conformance.ConformanceCases.root().resolve("numerics.safetensors");
        if (!Files.isRegularFile(file)) {
            fail("conformance goldens not found at " + file);
        }
        return file;
    }

    static String sha256(Path file) throws IOException {
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), MessageDigest.getInstance("SHA-256"))) {
            MessageDigest md = ((DigestInputStream) in).getMessageDigest();
            in.transferTo(java.io.OutputStream.nullOutputStream());
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    static String expectedSha256(Path sums, String name) throws IOException {
        for (String line : Files.readAllLines(sums)) {
            String[] parts = line.trim().split("\\s+", 2);
            if (parts.length == 2 && (parts[1].equals(name) || parts[1].equals("./" + name))) {
                return parts[0];
            }
        }
        throw new AssertionError(name + " is not listed in " + sums);
    }

    /**
     * Bit-exact float comparison (so -0 differs from +0); any NaN matches any NaN. {@code cols} > 0 adds the
     * [row, col] of the first difference to the message.
     */
    static void assertBitExact(String what, float[] expected, float[] actual, int cols) {
        assertThat(actual.length).as("%s length", what).isEqualTo(expected.length);
        int first = -1;
        int count = 0;
        for (int i = 0; i < expected.length; i++) {
            if (Float.floatToIntBits(expected[i]) != Float.floatToIntBits(actual[i])) {
                if (first < 0) {
                    first = i;
                }
                count++;
            }
        }
        if (first >= 0) {
            fail(String.format("%s: %d of %d differ; first at index %d%s: expected %s (0x%08X) but was %s (0x%08X)",
                    what, count, expected.length, first, where(first, cols), expected[first],
                    Float.floatToRawIntBits(expected[first]), actual[first], Float.floatToRawIntBits(actual[first])));
        }
    }

    /** Exact integer comparison, with {@code inputs} (may be null) shown at the first difference. */
    static void assertExact(String what, int[] expected, int[] actual, int cols, float[] inputs) {
        assertThat(actual.length).as("%s length", what).isEqualTo(expected.length);
        int first = -1;
        int count = 0;
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] != actual[i]) {
                if (first < 0) {
                    first = i;
                }
                count++;
            }
        }
        if (first >= 0) {
            String input = inputs == null ? "" : String.format(" (input %s, 0x%08X)", inputs[first],
                    Float.floatToRawIntBits(inputs[first]));
            fail(String.format("%s: %d of %d differ; first at index %d%s%s: expected %d (0x%X) but was %d (0x%X)",
                    what, count, expected.length, first, where(first, cols), input, expected[first], expected[first],
                    actual[first], actual[first]));
        }
    }

    static int[] unsigned(byte[] bytes) {
        int[] out = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            out[i] = bytes[i] & 0xFF;
        }
        return out;
    }

    private static String where(int index, int cols) {
        return cols > 0 ? " [row " + index / cols + ", col " + index % cols + "]" : "";
    }
}
