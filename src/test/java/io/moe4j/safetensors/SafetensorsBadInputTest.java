package io.moe4j.safetensors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Malformed files fail with one clear line naming the file (and tensor), never a crash, hang or OOM. */
class SafetensorsBadInputTest {
    @TempDir
    Path tmp;

    private Path withHeader(String json, int dataBytes) throws IOException {
        byte[] h = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        Path f = Files.createTempFile(tmp, "bad", ".safetensors");
        Files.write(f, b.array());
        return f;
    }

    private static void fails(Path f, String... fragments) {
        assertThatThrownBy(() -> SafetensorsFile.open(f).close())
                .isInstanceOf(SafetensorsException.class)
                .hasMessageContaining(f.toString())
                .satisfies(e -> {
                    for (String s : fragments) {
                        assertThat(e.getMessage()).contains(s);
                    }
                    assertThat(e.getMessage()).doesNotContain("\n");
                });
    }

    @Test
    void tooShortForLength() throws IOException {
        Path f = tmp.resolve("short.safetensors");
        Files.write(f, new byte[] {1, 2, 3});
        fails(f, "too short");
    }

    @Test
    void headerLengthPastEnd() throws IOException {
        Path f = tmp.resolve("len.safetensors");
        Files.write(f, ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1000).array());
        fails(f, "runs past the end");
    }

    @Test
    void hugeHeaderLengthIsRefusedBeforeAllocating() throws IOException {
        Path f = tmp.resolve("huge.safetensors");
        Files.write(f, ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(Long.MAX_VALUE - 3).array());
        fails(f, "exceeds");
    }

    @Test
    void notJson() throws IOException {
        fails(withHeader("{not json", 0), "not valid JSON");
    }

    @Test
    void notAnObject() throws IOException {
        fails(withHeader("[1, 2]", 0), "not a JSON object");
    }

    @Test
    void unknownDtype() throws IOException {
        fails(withHeader("{\"t\": {\"dtype\": \"Q9\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1), "'t'", "unknown dtype 'Q9'");
    }

    @Test
    void shapeDisagreesWithBytes() throws IOException {
        fails(withHeader("{\"t\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8), "'t'", "needs 12 bytes");
    }

    @Test
    void overlappingOffsets() throws IOException {
        fails(withHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]},"
                + "\"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [2, 6]}}", 6), "'b'", "overlaps");
    }

    @Test
    void gapBetweenTensors() throws IOException {
        fails(withHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]},"
                + "\"b\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [4, 6]}}", 6), "'b'", "gap");
    }

    @Test
    void offsetsPastEndOfFile() throws IOException {
        fails(withHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [64], \"data_offsets\": [0, 64]}}", 10), "'a'", "truncated");
    }

    @Test
    void trailingBytesAfterLastTensor() throws IOException {
        fails(withHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]}}", 5), "after the last tensor");
    }

    @Test
    void negativeOrFractionalShape() throws IOException {
        fails(withHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [-2], \"data_offsets\": [0, 0]}}", 0), "'a'", "non-negative");
        fails(withHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [1.5], \"data_offsets\": [0, 0]}}", 0), "'a'", "non-negative");
    }

    @Test
    void subByteSpanMustBeWholeBytes() throws IOException {
        fails(withHeader("{\"a\": {\"dtype\": \"F4\", \"shape\": [3], \"data_offsets\": [0, 2]}}", 2), "'a'", "whole number of bytes");
    }

    @Test
    void duplicateKeysAreRejected() throws IOException {
        fails(withHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]},"
                + "\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1), "not valid JSON");
    }

    @Test
    void missingFileIsNamed() {
        Path f = tmp.resolve("nope.safetensors");
        fails(f, "no such file");
    }
}
