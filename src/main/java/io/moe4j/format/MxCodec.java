package io.moe4j.format;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * OCP Microscaling (MX) block codec: blocks of {@value #BLOCK} elements along the last axis share one E8M0 scale
 * 2^e, and each element is stored as an {@link ElementFormat} code of x / 2^e.
 *
 * <p>The shared exponent follows the "even" rule of the conformance README (the rule AMD Quark uses): the block's
 * absolute maximum is rounded up to a power of two when rounding its mantissa to the element's mantissa width would
 * carry, so that the largest element does not saturate needlessly. Division by 2^e is done as multiplication by
 * 2^-e, which is the same correctly rounded operation because both powers are float32 values.
 *
 * <p>Packed layouts, as in the checkpoints: FP4 two codes a byte with the even element in the low nibble; FP6 four
 * codes in three bytes as the little-endian 24-bit word {@code c0 | c1<<6 | c2<<12 | c3<<18} (equivalently a
 * little-endian bit stream, element i at bit 6i); FP8 one code a byte.
 */
public final class MxCodec {
    public static final int BLOCK = 32;

    private static final ValueLayout.OfLong LONG_LE =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int FP32_EXPONENT_MASK = 0x7F800000;

    private MxCodec() {}

    // ---------------------------------------------------------------------------------------------- shared scale

    /** The E8M0 scale code of the block x[off, off+len) by the "even" rule; NaN anywhere gives the NaN code. */
    public static int sharedScaleCode(float[] x, int off, int len, ElementFormat f) {
        float amax = 0f;
        for (int i = off, end = off + len; i < end; i++) {
            amax = Math.max(amax, Math.abs(x[i])); // Math.max propagates NaN, which we want to surface
        }
        return scaleCodeForAmax(amax, f);
    }

    /** The E8M0 scale code for a block whose absolute maximum is {@code amax}. */
    public static int scaleCodeForAmax(float amax, ElementFormat f) {
        if (amax != amax) {
            return E8m0.NAN_CODE;
        }
        if (amax == 0f) {
            amax = 0x1p-126f;
        }
        int rounded = (Float.floatToRawIntBits(amax) + (1 << (22 - f.mantissaBits()))) & FP32_EXPONENT_MASK;
        int field = rounded >>> 23;
        if (field == 0xFF) {
            // The reference takes log2 of the rounded float: log2(inf) = inf, which clamps to the top exponent.
            return E8m0.encodeExponent(E8m0.MAX_EXPONENT);
        }
        // field 0 (a subnormal amax that did not round up) is log2(0) = -inf in the reference; field - 127 - emax is
        // already below -127 there and clamps to the same code.
        return E8m0.encodeExponent(field - 127 - f.emax());
    }

    // ---------------------------------------------------------------------------------------------- quantize

    /**
     * Quantizes one block x[off, off+len) (len at most 32 in OCP MX, though any length works) to element codes, one
     * per byte in codesOut[codesOff...], and returns its E8M0 scale code.
     */
    public static int quantizeBlock(float[] x, int off, int len, ElementFormat f, byte[] codesOut, int codesOff) {
        int scaleCode = sharedScaleCode(x, off, len, f);
        float inverse = E8m0.inverse(scaleCode);
        for (int i = 0; i < len; i++) {
            codesOut[codesOff + i] = (byte) f.encode(x[off + i] * inverse);
        }
        return scaleCode;
    }

    /**
     * Quantizes x[off, off+len) block by block (a shorter tail block is its own block): one code per byte into
     * codesOut from codesOff, one scale code per block into scalesOut from scalesOff. Returns the number of blocks.
     */
    public static int quantize(float[] x, int off, int len, ElementFormat f,
                               byte[] codesOut, int codesOff, byte[] scalesOut, int scalesOff) {
        int blocks = 0;
        for (int b = 0; b < len; b += BLOCK, blocks++) {
            int n = Math.min(BLOCK, len - b);
            scalesOut[scalesOff + blocks] = (byte) quantizeBlock(x, off + b, n, f, codesOut, codesOff + b);
        }
        return blocks;
    }

    /** Quantize-dequantize x[off, off+len) in place, block by block; a shorter tail block is its own block. */
    public static void qdqInPlace(float[] x, int off, int len, ElementFormat f) {
        float[] table = f.table();
        for (int b = off, end = off + len; b < end; b += BLOCK) {
            int n = Math.min(BLOCK, end - b);
            int scaleCode = sharedScaleCode(x, b, n, f);
            float scale = E8m0.decode(scaleCode);
            float inverse = E8m0.inverse(scaleCode);
            for (int i = b; i < b + n; i++) {
                x[i] = table[f.encode(x[i] * inverse)] * scale;
            }
        }
    }

    // ---------------------------------------------------------------------------------------------- packing

    /** Bytes that n packed codes of the given width occupy. */
    public static int packedBytes(ElementFormat f, int n) {
        return (int) (((long) n * f.bits() + 7) >>> 3);
    }

    /** Two FP4 codes a byte, element 2i in the low nibble; an odd tail leaves the last high nibble 0. */
    public static void packFp4(byte[] codes, int n, byte[] out) {
        packFp4(codes, 0, n, out, 0);
    }

    public static void packFp4(byte[] codes, int codesOff, int n, byte[] out, int outOff) {
        int pairs = n >>> 1;
        for (int i = 0; i < pairs; i++) {
            int lo = codes[codesOff + 2 * i] & 0xF;
            int hi = codes[codesOff + 2 * i + 1] & 0xF;
            out[outOff + i] = (byte) (lo | hi << 4);
        }
        if ((n & 1) != 0) {
            out[outOff + pairs] = (byte) (codes[codesOff + n - 1] & 0xF);
        }
    }

    /**
     * Four FP6 codes in three bytes, the little-endian word c0 | c1<<6 | c2<<12 | c3<<18. A tail of fewer than four
     * codes writes only the bytes its bits reach ({@link #packedBytes}), zero-filled above them.
     */
    public static void packFp6(byte[] codes, int n, byte[] out) {
        packFp6(codes, 0, n, out, 0);
    }

    public static void packFp6(byte[] codes, int codesOff, int n, byte[] out, int outOff) {
        int groups = n >>> 2;
        for (int g = 0; g < groups; g++) {
            int c = codesOff + 4 * g;
            int word = (codes[c] & 0x3F) | (codes[c + 1] & 0x3F) << 6
                    | (codes[c + 2] & 0x3F) << 12 | (codes[c + 3] & 0x3F) << 18;
            int o = outOff + 3 * g;
            out[o] = (byte) word;
            out[o + 1] = (byte) (word >>> 8);
            out[o + 2] = (byte) (word >>> 16);
        }
        int rest = n & 3;
        if (rest != 0) {
            int c = codesOff + 4 * groups;
            int word = 0;
            for (int k = 0; k < rest; k++) {
                word |= (codes[c + k] & 0x3F) << (6 * k);
            }
            int o = outOff + 3 * groups;
            for (int k = 0, bytes = (6 * rest + 7) >>> 3; k < bytes; k++) {
                out[o + k] = (byte) (word >>> (8 * k));
            }
        }
    }

    /** The FP4 code of element i of a packed array. */
    public static int fp4Code(byte[] packed, int elementIndex) {
        return (packed[elementIndex >>> 1] >>> ((elementIndex & 1) << 2)) & 0xF;
    }

    /** The FP6 code of element i of a packed array: bits [6i, 6i+6) of a little-endian bit stream. */
    public static int fp6Code(byte[] packed, int elementIndex) {
        long bit = 6L * elementIndex;
        int at = (int) (bit >>> 3);
        int shift = (int) (bit & 7);
        int v = packed[at] & 0xFF;
        if (shift > 2) {
            v |= (packed[at + 1] & 0xFF) << 8;
        }
        return (v >>> shift) & 0x3F;
    }

    /** The FP4 code of element i of packed codes starting at byte 0 of the segment. */
    public static int fp4Code(MemorySegment packed, long elementIndex) {
        byte b = packed.get(ValueLayout.JAVA_BYTE, elementIndex >>> 1);
        return (b >>> ((elementIndex & 1) << 2)) & 0xF;
    }

    /** The FP6 code of element i of packed codes starting at byte 0 of the segment. */
    public static int fp6Code(MemorySegment packed, long elementIndex) {
        long bit = 6L * elementIndex;
        long at = bit >>> 3;
        int shift = (int) (bit & 7);
        int v = packed.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
        if (shift > 2) {
            // Only shifts 4 and 6 spill into the next byte; reading it otherwise could run past the segment's end.
            v |= (packed.get(ValueLayout.JAVA_BYTE, at + 1) & 0xFF) << 8;
        }
        return (v >>> shift) & 0x3F;
    }

    /** Unpacks n codes of format f (4, 6 or 8 bits) from a packed array into one code a byte. */
    public static void unpack(byte[] packed, ElementFormat f, int n, byte[] codesOut, int codesOff) {
        for (int i = 0; i < n; i++) {
            codesOut[codesOff + i] = (byte) switch (f.bits()) {
                case 4 -> fp4Code(packed, i);
                case 6 -> fp6Code(packed, i);
                default -> packed[i];
            };
        }
    }

    // ---------------------------------------------------------------------------------------------- decode

    /**
     * Dequantizes one row of {@code cols} elements (a multiple of 32) into out[outOff...]: packed codes start at byte
     * codeByteOffset of packedCodes (FP4: 16 bytes a block, FP6: 24, FP8: 32), E8M0 scales one byte a block at byte
     * scaleOffset of scales. Each value is decode(code) · 2^e, exact.
     */
    public static void decodeRow(MemorySegment packedCodes, long codeByteOffset, MemorySegment scales,
                                 long scaleOffset, int cols, ElementFormat f, float[] out, int outOff) {
        if (cols % BLOCK != 0) {
            throw new IllegalArgumentException("cols must be a multiple of " + BLOCK + ": " + cols);
        }
        float[] t = f.table();
        int blocks = cols / BLOCK;
        int o = outOff;
        switch (f.bits()) {
            case 4 -> {
                long at = codeByteOffset;
                for (int b = 0; b < blocks; b++, at += 16) {
                    float s = E8m0.decode(scales.get(ValueLayout.JAVA_BYTE, scaleOffset + b));
                    o = emitNibbles(packedCodes.get(LONG_LE, at), t, s, out, o);
                    o = emitNibbles(packedCodes.get(LONG_LE, at + 8), t, s, out, o);
                }
            }
            case 6 -> {
                long at = codeByteOffset;
                for (int b = 0; b < blocks; b++, at += 24) {
                    float s = E8m0.decode(scales.get(ValueLayout.JAVA_BYTE, scaleOffset + b));
                    long w0 = packedCodes.get(LONG_LE, at);
                    long w1 = packedCodes.get(LONG_LE, at + 8);
                    long w2 = packedCodes.get(LONG_LE, at + 16);
                    // 32 six-bit codes fill exactly three longs; codes 10 and 21 straddle a long boundary.
                    o = emitSixes(w0, 0, t, s, out, o);
                    out[o++] = t[(int) ((w0 >>> 60) | (w1 << 4)) & 0x3F] * s;
                    o = emitSixes(w1, 2, t, s, out, o);
                    out[o++] = t[(int) ((w1 >>> 62) | (w2 << 2)) & 0x3F] * s;
                    o = emitSixes(w2, 4, t, s, out, o);
                }
            }
            default -> {
                long at = codeByteOffset;
                for (int b = 0; b < blocks; b++) {
                    float s = E8m0.decode(scales.get(ValueLayout.JAVA_BYTE, scaleOffset + b));
                    for (int k = 0; k < 4; k++, at += 8) {
                        long w = packedCodes.get(LONG_LE, at);
                        for (int j = 0; j < 64; j += 8) {
                            out[o++] = t[(int) (w >>> j) & 0xFF] * s;
                        }
                    }
                }
            }
        }
    }

    private static int emitNibbles(long w, float[] t, float s, float[] out, int o) {
        for (int j = 0; j < 64; j += 4) {
            out[o++] = t[(int) (w >>> j) & 0xF] * s;
        }
        return o;
    }

    /** Ten codes at bit offsets first, first+6, ..., first+54 of w. */
    private static int emitSixes(long w, int first, float[] t, float s, float[] out, int o) {
        for (int j = first; j < first + 60; j += 6) {
            out[o++] = t[(int) (w >>> j) & 0x3F] * s;
        }
        return o;
    }
}
