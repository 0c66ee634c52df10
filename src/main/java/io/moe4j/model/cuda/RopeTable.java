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
        float[] inv = rope.invFreq();
        int half = inv.length;
        long at = 0;
        for (int p = from; p < from + count; p++) {
            for (int i = 0; i < half; i++, at += 4) {
                float angle = (float) p * inv[i];
                cos.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at, (float) Math.cos(angle) * rope.attentionFactor());
                sin.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at, (float) Math.sin(angle) * rope.attentionFactor());
            }
        }
    }
}
