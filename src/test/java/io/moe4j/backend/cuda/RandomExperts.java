package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/** Random packed expert stacks with every code value represented and realistic scale ranges; never all zeros. */
final class RandomExperts {
    private RandomExperts() {
    }

    static RowStack mxfp4(Arena arena, SplittableRandom rnd, int e, int n, int k, int minScale, int maxScale) {
        long rows = (long) e * n;
        MemorySegment codes = randomBytes(arena, rnd, rows * k / 2);
        MemorySegment scales = arena.allocate(rows * k / 32);
        for (long i = 0; i < scales.byteSize(); i++) {
            scales.set(JAVA_BYTE, i, (byte) rnd.nextInt(minScale, maxScale + 1));
        }
        return new RowStack(RowFormat.MXFP4, e, n, k, 0, codes, scales);
    }

    static RowStack int4(Arena arena, SplittableRandom rnd, int e, int n, int k, int group) {
        long rows = (long) e * n;
        MemorySegment codes = randomBytes(arena, rnd, rows * k / 2);
        MemorySegment scales = arena.allocate(2 * rows * (k / group));
        for (long i = 0; i < rows * (k / group); i++) {
            scales.set(JAVA_SHORT_UNALIGNED, 2 * i, bf16(rnd.nextDouble(0.001, 0.05)));
        }
        return new RowStack(RowFormat.INT4, e, n, k, group, codes, scales);
    }

    static RowStack bf16(Arena arena, SplittableRandom rnd, int e, int n, int k) {
        long count = (long) e * n * k;
        MemorySegment codes = arena.allocate(2 * count);
        for (long i = 0; i < count; i++) {
            codes.set(JAVA_SHORT_UNALIGNED, 2 * i, bf16(rnd.nextGaussian() * 0.05));
        }
        return new RowStack(RowFormat.BF16, e, n, k, 0, codes, MemorySegment.NULL);
    }

    static RowStack fp8(Arena arena, SplittableRandom rnd, int e, int n, int k) {
        long rows = (long) e * n;
        MemorySegment codes = arena.allocate(rows * k);
        for (long i = 0; i < codes.byteSize(); i++) {
            int b;
            do {
                b = rnd.nextInt(256);
            } while ((b & 0x7F) == 0x7F); // NaN codes aside: they are tested on purpose, not drawn by chance
            codes.set(JAVA_BYTE, i, (byte) b);
        }
        MemorySegment scales = arena.allocate(4 * rows);
        for (long i = 0; i < rows; i++) {
            scales.set(JAVA_FLOAT_UNALIGNED, 4 * i, (float) rnd.nextDouble(1e-4, 1e-2));
        }
        return new RowStack(RowFormat.FP8_E4M3, e, n, k, 0, codes, scales);
    }

    static float[] activations(SplittableRandom rnd, int rows, int k) {
        float[] x = new float[rows * k];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        return x;
    }

    static int[] ints(SplittableRandom rnd, int count, int bound) {
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            out[i] = rnd.nextInt(bound);
        }
        return out;
    }

    private static MemorySegment randomBytes(Arena arena, SplittableRandom rnd, long count) {
        MemorySegment s = arena.allocate(count);
        for (long i = 0; i < count; i++) {
            s.set(JAVA_BYTE, i, (byte) rnd.nextInt(256));
        }
        return s;
    }

    /** Round-to-nearest-even float to bf16 bits. */
    static short bf16(double value) {
        int bits = Float.floatToRawIntBits((float) value);
        int rounded = bits + 0x7FFF + ((bits >>> 16) & 1);
        return (short) (rounded >>> 16);
    }
}
