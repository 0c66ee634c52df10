package io.moe4j.format;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * NVFP4: E2M1 elements in blocks of {@value #BLOCK}, one E4M3FN block scale each, and one FP32 global scale g per
 * tensor. g is a quantize multiplier (compressed-tensors' {@code *_global_scale}): the stored block scale is
 * e4m3(g · amax / 6) and a value is e2m1 · s8 / g.
 *
 * <p>Activation quantize-dequantize computes in float64 from the float32 inputs, as the references do (the FP8 and
 * INT8 goldens prove their float64 arithmetic; these goldens agree with it). What the goldens do pin: the value
 * is (e2m1 · s8) / g rounded once (the product is exact), so the float32 shortcut e2m1 · float(s8 / g), which
 * rounds twice, misses them in the last bit. {@link #decodeRow} computes the same single rounding in float32: an
 * exact product divided by g is correctly rounded either way. Packing is {@link MxCodec#packFp4}'s: two codes a
 * byte, even element in the low nibble.
 */
public final class Nvfp4Codec {
    public static final int BLOCK = 16;

    private static final ValueLayout.OfLong LONG_LE =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ElementFormat ELEMENT = ElementFormat.E2M1;
    private static final ElementFormat SCALE = ElementFormat.E4M3FN;

    private Nvfp4Codec() {}

    /** The E4M3 block scale code for a block with absolute maximum amax: e4m3(g · amax / 6). */
    public static int blockScaleCode(float amax, float globalScale) {
        return SCALE.encode((double) globalScale * amax / 6);
    }

    /** Quantize-dequantize x[off, off+len) in place, blocks of 16 (a shorter tail block is its own block). */
    public static void qdqInPlace(float[] x, int off, int len, float globalScale) {
        float[] e2m1 = ELEMENT.table();
        for (int b = off, end = off + len; b < end; b += BLOCK) {
            int n = Math.min(BLOCK, end - b);
            float s8 = SCALE.decode(blockScaleCode(absMax(x, b, n), globalScale));
            if (s8 == 0f) {
                java.util.Arrays.fill(x, b, b + n, 0f);
                continue;
            }
            double g = globalScale;
            double scale = s8 / g;
            for (int i = b; i < b + n; i++) {
                x[i] = (float) (e2m1[ELEMENT.encode(x[i] / scale)] * (double) s8 / g);
            }
        }
    }

    /**
     * Quantizes x[off, off+len) to E2M1 codes (one a byte, into codesOut from codesOff) and E4M3 block scale codes
     * (one a block, into scalesOut from scalesOff). A block whose scale is zero gets all-zero codes. Returns the
     * number of blocks.
     */
    public static int quantize(float[] x, int off, int len, float globalScale,
                               byte[] codesOut, int codesOff, byte[] scalesOut, int scalesOff) {
        int blocks = 0;
        for (int b = 0; b < len; b += BLOCK, blocks++) {
            int n = Math.min(BLOCK, len - b);
            int scaleCode = blockScaleCode(absMax(x, off + b, n), globalScale);
            scalesOut[scalesOff + blocks] = (byte) scaleCode;
            float s8 = SCALE.decode(scaleCode);
            double scale = s8 / (double) globalScale;
            for (int i = 0; i < n; i++) {
                codesOut[codesOff + b + i] = s8 == 0f ? 0 : (byte) ELEMENT.encode(x[off + b + i] / scale);
            }
        }
        return blocks;
    }

    /**
     * Dequantizes one row of {@code cols} elements (a multiple of 16): packed E2M1 codes (8 bytes a block) from byte
     * codeByteOffset of packed, E4M3 block scales (one byte a block) from byte scaleOffset of blockScalesE4m3.
     * Each value is (e2m1 · e4m3(scale)) / globalScale.
     */
    public static void decodeRow(MemorySegment packed, long codeByteOffset, MemorySegment blockScalesE4m3,
                                 long scaleOffset, int cols, float globalScale, float[] out, int outOff) {
        if (cols % BLOCK != 0) {
            throw new IllegalArgumentException("cols must be a multiple of " + BLOCK + ": " + cols);
        }
        float[] e2m1 = ELEMENT.table();
        int o = outOff;
        long at = codeByteOffset;
        for (int b = 0, blocks = cols / BLOCK; b < blocks; b++, at += 8) {
            float s8 = SCALE.decode(blockScalesE4m3.get(ValueLayout.JAVA_BYTE, scaleOffset + b));
            long w = packed.get(LONG_LE, at);
            for (int j = 0; j < 64; j += 4) {
                out[o++] = e2m1[(int) (w >>> j) & 0xF] * s8 / globalScale;
            }
        }
    }

    static float absMax(float[] x, int off, int len) {
        float amax = 0f;
        for (int i = off, end = off + len; i < end; i++) {
            amax = Math.max(amax, Math.abs(x[i]));
        }
        return amax;
    }
}
