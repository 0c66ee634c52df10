package io.moe4j.quant.method;

import io.moe4j.quant.CodeType;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsException;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

import static io.moe4j.quant.method.TensorChecks.ceilDiv;
import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * compressed-tensors {@code pack-quantized} integer tensors, one matrix at a time: {@code weight_packed} I32
 * [rows, ceil(cols·bits/32)] (32/bits values a word, each offset-binary value + 2^(bits−1), the first in the lowest
 * bits), {@code weight_zero_point} (packed along rows the same way, or unpacked I8 / I32), {@code weight_g_idx} and
 * {@code weight_shape}. Shared by the MoE method and the dense linears.
 *
 * <p>Unpacking turns the words into {@link CodeType#INT4} (two's-complement nibbles, even element low) or
 * {@link CodeType#INT8} codes: flipping the top bit of each offset-binary field makes it two's complement, and the
 * lowest-bits-first order is already the nibble order.
 */
final class PackQuantized {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private PackQuantized() {
    }

    static CodeType codeType(int bits) {
        return bits == 4 ? CodeType.INT4 : CodeType.INT8;
    }

    static int perWord(int bits) {
        return 32 / bits;
    }

    /** The packed tensor of one matrix, checked: I32 [rows, ceil(cols / perWord)]. */
    static Tensor checkPacked(Tensor t, int rows, int cols, int bits) {
        return expect(t, new long[]{rows, ceilDiv(cols, perWord(bits))}, DType.I32);
    }

    /** Writes the rows × rowBytes codes of one packed matrix into {@code codes} from byte {@code at}. */
    static void unpack(Tensor packed, int rows, int cols, int bits, MemorySegment codes, long at) {
        long rowBytes = codeType(bits).rowBytes(cols);
        MemorySegment src = packed.segment();
        long words = packed.shape()[1];
        int mask = bits == 4 ? 0x88888888 : 0x80808080;
        for (int r = 0; r < rows; r++) {
            long rowStart = at + r * rowBytes;
            for (long w = 0; w < words; w++) {
                int v = src.get(I32, ((long) r * words + w) * 4) ^ mask;
                for (int b = 0; b < 4; b++) {
                    long byteInRow = w * 4 + b;
                    if (byteInRow < rowBytes) {
                        codes.set(ValueLayout.JAVA_BYTE, rowStart + byteInRow, (byte) (v >>> (8 * b)));
                    }
                }
            }
        }
    }

    /** Fails naming the tensor unless {@code weight_shape} says [rows, cols]. */
    static void checkShape(Tensor t, int rows, int cols) {
        expect(t, new long[]{2}, DType.I64, DType.I32);
        long[] s = t.toLongArray();
        if (s[0] != rows || s[1] != cols) {
            throw new SafetensorsException(t.file(), t.name(), "weight_shape says " + Arrays.toString(s) + " but the "
                    + "module needs [" + rows + ", " + cols + "]");
        }
    }

    /**
     * The zero points of one matrix on its scale grid, one signed byte per (row, group) written from byte
     * {@code at}: packed along rows (I32 [ceil(rows / perWord), groups]) or unpacked (I8 / I32 [rows, groups]).
     */
    static void zeroPoints(Tensor t, int rows, int groups, int bits, MemorySegment out, long at) {
        int pw = perWord(bits);
        long[] s = t.shape();
        boolean packedRows = t.dtype() == DType.I32 && s.length == 2 && s[0] == ceilDiv(rows, pw) && s[1] == groups
                && !(s[0] == rows && pw == 1);
        if (!packedRows) {
            expect(t, new long[]{rows, groups}, DType.I8, DType.I32);
        }
        int[] v = t.toIntArray();
        for (int r = 0; r < rows; r++) {
            for (int g = 0; g < groups; g++) {
                int z = packedRows
                        ? ((v[(r / pw) * groups + g] >>> ((r % pw) * bits)) & ((1 << bits) - 1)) - (1 << (bits - 1))
                        : v[r * groups + g];
                out.set(ValueLayout.JAVA_BYTE, at + (long) r * groups + g, (byte) z);
            }
        }
    }

    /** The act-order group of each of the cols input columns, checked to lie in [0, groups). */
    static int[] groupIndex(Tensor t, int cols, int groups) {
        expect(t, new long[]{cols}, DType.I32, DType.I64);
        int[] g = t.toIntArray();
        for (int v : g) {
            if (v < 0 || v >= groups) {
                throw new SafetensorsException(t.file(), t.name(), "group index " + v + " is outside [0, " + groups + ")");
            }
        }
        return g;
    }
}
