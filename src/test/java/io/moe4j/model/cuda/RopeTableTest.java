package io.moe4j.model.cuda;

import io.moe4j.model.Rope;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The device's RoPE tables rotate as the host {@link Rope} does, bit for bit, whatever range of positions a chunk
 * covers (the tables are built a chunk at a time). Runs without a GPU: it checks the host side of the upload.
 */
class RopeTableTest {

    @Test
    void aChunkOfTheTableRotatesAsTheHostRope() {
        SplittableRandom rnd = new SplittableRandom(3);
        float[] inv = new float[16];
        for (int i = 0; i < inv.length; i++) {
            inv[i] = (float) Math.pow(500000.0, -2.0 * i / 32);
        }
        for (boolean interleaved : new boolean[] {false, true}) {
            Rope rope = new Rope(inv, 1.0625f, interleaved);
            int half = inv.length;
            int from = 9_000_000; // deep into a long context: the chunk's own positions, not 0..
            int count = 5;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment cos = arena.allocate(4L * count * half);
                MemorySegment sin = arena.allocate(4L * count * half);
                RopeTable.fill(rope, from, count, cos, sin);
                for (int t = 0; t < count; t++) {
                    float[] v = new float[2 * half];
                    for (int i = 0; i < v.length; i++) {
                        v[i] = (float) rnd.nextGaussian();
                    }
                    float[] want = v.clone();
                    rope.rotate(want, 0, from + t);
                    float[] got = v.clone();
                    for (int i = 0; i < half; i++) {
                        float c = cos.getAtIndex(ValueLayout.JAVA_FLOAT, (long) t * half + i);
                        float s = sin.getAtIndex(ValueLayout.JAVA_FLOAT, (long) t * half + i);
                        int a = interleaved ? 2 * i : i;
                        int b = interleaved ? a + 1 : i + half;
                        float x1 = v[a];
                        float x2 = v[b];
                        got[a] = x1 * c - x2 * s;
                        got[b] = x2 * c + x1 * s;
                    }
                    assertThat(got).as("position %d, interleaved %s", from + t, interleaved).containsExactly(want);
                }
            }
        }
    }
}
