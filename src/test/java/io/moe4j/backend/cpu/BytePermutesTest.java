package io.moe4j.backend.cpu;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BytePermutesTest {
    @Test
    void byteLookupsOnlyAt512BitsWithVbmiUnlessForced() {
        assertThat(BytePermutes.choose(null, 512, true)).isTrue();
        assertThat(BytePermutes.choose(null, 512, false)).isFalse();
        assertThat(BytePermutes.choose(" ", 256, true)).isFalse();
        assertThat(BytePermutes.choose("false", 512, true)).isFalse();
        assertThat(BytePermutes.choose("true", 512, false)).isTrue();
        assertThatThrownBy(() -> BytePermutes.choose("true", 256, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("512-bit");
        assertThatThrownBy(() -> BytePermutes.choose("yes", 512, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(BytePermutes.PROPERTY);
    }

    @Test
    void vbmiIsReadFromTheFirstFlagsLine(@TempDir Path dir) throws IOException {
        Path with = dir.resolve("with");
        Files.writeString(with, "processor\t: 0\nflags\t\t: fpu avx512f avx512vbmi avx512bw\n\nflags\t\t: fpu\n");
        Path without = dir.resolve("without");
        Files.writeString(without, "processor\t: 0\nflags\t\t: fpu avx512f avx512_vbmi2 avx512vbmix\n");
        assertThat(BytePermutes.vbmi(with)).isTrue();
        assertThat(BytePermutes.vbmi(without)).isFalse();
        assertThat(BytePermutes.vbmi(dir.resolve("missing"))).isFalse();
    }
}
