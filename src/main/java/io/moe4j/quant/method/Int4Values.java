package io.moe4j.quant.method;

import io.moe4j.safetensors.SafetensorsException;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * int4 weights stored one value a byte (compressed-tensors {@code int-quantized} W4A8: I8 in [−8, 7]), packed into
 * {@link io.moe4j.quant.CodeType#INT4} nibbles, two a byte with the even element low, as the seed packs them for
 * its kernel.
 */
final class Int4Values {
    private Int4Values() {
    }

    /** Packs the rows × cols values of {@code values} (cols even) into {@code out} from byte {@code at}. */
    static void pack(Tensor values, int rows, int cols, MemorySegment out, long at) {
        MemorySegment src = values.segment();
        for (long i = 0, n = (long) rows * cols; i < n; i += 2) {
            int lo = src.get(ValueLayout.JAVA_BYTE, i);
            int hi = src.get(ValueLayout.JAVA_BYTE, i + 1);
            if (lo < -8 || lo > 7 || hi < -8 || hi > 7) {
                throw new SafetensorsException(values.file(), values.name(), "value " + (lo < -8 || lo > 7 ? lo : hi)
                        + " at element " + (lo < -8 || lo > 7 ? i : i + 1) + " is outside the int4 range [-8, 7]");
            }
            out.set(ValueLayout.JAVA_BYTE, at + i / 2, (byte) ((lo & 0xF) | (hi & 0xF) << 4));
        }
    }
}
