package io.moe4j.model.cuda;

import io.moe4j.model.Rope;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The cos and sin tables [position, dim / 2] a RoPE reads on the device, computed with the host {@link Rope}'s
 * float32 arithmetic (float angle, cos and sin rounded to float, times the attention factor) so that both decoders
 * rotate alike. Filled a range of positions at a time, so that a long context (Llama-4's is ten million positions)
 * never needs the whole table in the Java heap.
 */
final class RopeTable {
    private RopeTable() {
    }

    /**
     * Writes the rows of positions [from, from + count) into {@code cos} and {@code sin} (float32, row-major from
     * their start; each at least count · dim / 2 floats).
     */
    static void fill(Rope rope, int from, int count, MemorySegment cos, MemorySegment sin) {
        int half = rope.invFreq().length;
        float[] c = new float[half];
        float[] s = new float[half];
        long at = 0;
        for (int p = from; p < from + count; p++, at += 4L * half) {
            rope.cosSin(p, c, s);
            MemorySegment.copy(c, 0, cos, ValueLayout.JAVA_FLOAT_UNALIGNED, at, half);
            MemorySegment.copy(s, 0, sin, ValueLayout.JAVA_FLOAT_UNALIGNED, at, half);
        }
    }
}
