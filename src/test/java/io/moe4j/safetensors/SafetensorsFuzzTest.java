package io.moe4j.safetensors;

import io.moe4j.MoeException;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** Fuzzing: random corruptions of a valid file never crash, hang or OOM. */
class SafetensorsFuzzTest {
    /** Random corruptions of a valid file either still open consistently or fail with a SafetensorsException. */
    @Property(tries = 300)
    void randomCorruptionsFailCleanly(@ForAll @IntRange(min = 0, max = Integer.MAX_VALUE) int seed) throws IOException {
        Path dir = Files.createTempDirectory("fuzz");
        try {
            Path valid = dir.resolve("v.safetensors");
            new SafetensorsWriter().metadata("format", "pt")
                    .addF32("alpha", new long[] {3, 5}, new float[15])
                    .add("beta", DType.F4, new long[] {2, 8}, new byte[8])
                    .addI32("gamma", new long[] {4}, new int[4])
                    .write(valid);
            byte[] bytes = Files.readAllBytes(valid);
            Random r = new Random(seed);
            int mode = r.nextInt(4);
            byte[] corrupt = switch (mode) {
                case 0 -> java.util.Arrays.copyOf(bytes, r.nextInt(bytes.length)); // truncate
                case 1 -> { // flip bytes anywhere, header length included
                    byte[] c = bytes.clone();
                    for (int i = 0, n = 1 + r.nextInt(4); i < n; i++) {
                        c[r.nextInt(c.length)] ^= (byte) (1 + r.nextInt(255));
                    }
                    yield c;
                }
                case 2 -> { // overwrite a header digit or punctuation
                    byte[] c = bytes.clone();
                    int pos = 8 + r.nextInt((int) Math.min(c.length - 8, 200));
                    c[pos] = "0123456789,[]{}\"-:"
                            .getBytes(StandardCharsets.US_ASCII)[r.nextInt(18)];
                    yield c;
                }
                default -> { // append junk
                    byte[] c = java.util.Arrays.copyOf(bytes, bytes.length + 1 + r.nextInt(16));
                    yield c;
                }
            };
            Path bad = dir.resolve("c.safetensors");
            Files.write(bad, corrupt);
            try (SafetensorsFile f = SafetensorsFile.open(bad)) {
                // Accepted: every tensor must then be readable within the file.
                for (TensorInfo t : f.tensors().values()) {
                    assertThat(f.tensor(t.name()).segment().byteSize()).isEqualTo(t.byteSize());
                }
            } catch (MoeException expected) {
                assertThat(expected.getMessage()).contains(bad.toString()).doesNotContain("\n");
            }
        } finally {
            try (var s = Files.walk(dir)) {
                s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
