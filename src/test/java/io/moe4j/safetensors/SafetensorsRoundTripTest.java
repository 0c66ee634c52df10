package io.moe4j.safetensors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SafetensorsRoundTripTest {
    @TempDir
    Path tmp;

    @Test
    void writtenTensorsReadBackBitExactly() {
        float[] f = {1.5f, -2.25f, Float.MIN_VALUE, Float.NaN, -0f, 3.4e38f};
        int[] ints = {Integer.MIN_VALUE, -1, 0, 7, Integer.MAX_VALUE, 42};
        byte[] fp4 = {0x12, (byte) 0xF0, 0x7f};
        Path file = tmp.resolve("a.safetensors");
        new SafetensorsWriter().metadata("format", "pt")
                .addF32("f", new long[] {2, 3}, f)
                .addI32("i", new long[] {6}, ints)
                .add("packed", DType.F4, new long[] {6}, fp4)
                .addBf16("b", new long[] {2}, new float[] {1f, -3.5f})
                .addI64("shape", new long[] {2}, new long[] {64, 128})
                .add("empty", DType.F32, new long[] {0, 4}, new byte[0])
                .write(file);

        try (SafetensorsFile s = SafetensorsFile.open(file)) {
            assertThat(s.metadata()).containsEntry("format", "pt");
            assertThat(s.tensors().keySet()).containsExactly("f", "i", "packed", "b", "shape", "empty");
            Tensor tf = s.tensor("f");
            assertThat(tf.shape()).containsExactly(2, 3);
            float[] back = tf.toFloatArray();
            for (int k = 0; k < f.length; k++) {
                assertThat(Float.floatToRawIntBits(back[k])).isEqualTo(Float.floatToRawIntBits(f[k]));
            }
            assertThat(s.tensor("i").toIntArray()).containsExactly(ints);
            assertThat(s.tensor("packed").toByteArray()).containsExactly(fp4);
            assertThat(s.tensor("b").toFloatArray()).containsExactly(1f, -3.5f);
            assertThat(s.tensor("shape").toLongArray()).containsExactly(64, 128);
            assertThat(s.tensor("empty").elementCount()).isZero();
        }
    }

    @Test
    void headerIsPaddedToEightBytes() throws IOException {
        Path file = tmp.resolve("pad.safetensors");
        new SafetensorsWriter().addF32("x", new long[] {1}, new float[] {1f}).write(file);
        byte[] bytes = Files.readAllBytes(file);
        long n = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        assertThat(n % 8).isZero();
        assertThat(bytes.length).isEqualTo(8 + n + 4);
    }

    @Test
    void shardedCheckpointFollowsTheIndexNeverGuesses() throws IOException {
        new SafetensorsWriter().addF32("a", new long[] {1}, new float[] {1f}).write(tmp.resolve("part-x.safetensors"));
        new SafetensorsWriter().addF32("b", new long[] {1}, new float[] {2f}).write(tmp.resolve("part-y.safetensors"));
        Files.writeString(tmp.resolve(Checkpoint.INDEX_FILE),
                "{\"metadata\": {}, \"weight_map\": {\"a\": \"part-x.safetensors\", \"b\": \"part-y.safetensors\"}}");
        try (Checkpoint c = Checkpoint.open(tmp)) {
            assertThat(c.tensor("a").toFloatArray()).containsExactly(1f);
            assertThat(c.tensor("b").toFloatArray()).containsExactly(2f);
            assertThat(c.infos()).hasSize(2);
            assertThatThrownBy(() -> c.tensor("c")).hasMessageContaining("'c'").hasMessageContaining("missing");
        }
        Files.delete(tmp.resolve(Checkpoint.INDEX_FILE));
        assertThatThrownBy(() -> Checkpoint.open(tmp)).hasMessageContaining("no " + Checkpoint.INDEX_FILE);
    }

    @Test
    void indexNamingAMissingShardFailsNamingIt() throws IOException {
        Files.writeString(tmp.resolve(Checkpoint.INDEX_FILE), "{\"weight_map\": {\"a\": \"gone.safetensors\"}}");
        try (Checkpoint c = Checkpoint.open(tmp)) {
            assertThatThrownBy(() -> c.tensor("a")).hasMessageContaining("gone.safetensors").hasMessageContaining("no such file");
        }
    }

    @Test
    void expectNamesTheTensorAndBothShapes() {
        Path file = tmp.resolve("e.safetensors");
        new SafetensorsWriter().addF32("w", new long[] {2, 3}, new float[6]).write(file);
        try (SafetensorsFile s = SafetensorsFile.open(file)) {
            assertThatThrownBy(() -> s.tensor("w").expect(DType.BF16, 2, 3)).hasMessageContaining("'w'")
                    .hasMessageContaining("BF16").hasMessageContaining("F32");
            assertThatThrownBy(() -> s.tensor("w").expectShape(3, -1)).hasMessageContaining("[3, *]")
                    .hasMessageContaining("[2, 3]");
            assertThat(s.tensor("w").expectShape(2, -1).name()).isEqualTo("w");
        }
    }
}
