package io.moe4j.safetensors;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * A typed view of one tensor's bytes inside a mapped file: no copy is made until a {@code to*Array} call,
 * which is meant for small tensors (scales, biases, router weights).
 */
public record Tensor(Path file, TensorInfo info, MemorySegment segment) {
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public String name() {
        return info.name();
    }

    public DType dtype() {
        return info.dtype();
    }

    public long[] shape() {
        return info.shape();
    }

    public long elementCount() {
        return info.elementCount();
    }

    /** Element {@code i} as a float, for F32, F64, BF16 and F16 tensors. */
    public float getFloat(long i) {
        return switch (info.dtype()) {
            case F32 -> segment.get(F32, i * 4);
            case F64 -> (float) segment.get(F64, i * 8);
            case BF16 -> Float.intBitsToFloat((segment.get(I16, i * 2) & 0xFFFF) << 16);
            case F16 -> Float.float16ToFloat(segment.get(I16, i * 2));
            default -> throw new SafetensorsException(file, name(), "dtype " + dtype() + " is not a plain float type");
        };
    }

    public float[] toFloatArray() {
        float[] out = new float[checkedLength()];
        for (int i = 0; i < out.length; i++) {
            out[i] = getFloat(i);
        }
        return out;
    }

    public byte[] toByteArray() {
        if (info.byteSize() > Integer.MAX_VALUE - 8) {
            throw new SafetensorsException(file, name(), "too large to copy onto the heap");
        }
        return segment.toArray(ValueLayout.JAVA_BYTE);
    }

    /** Integer elements widened to int (I8, U8, I16, U16, I32); I64 elements must fit in an int. */
    public int[] toIntArray() {
        int[] out = new int[checkedLength()];
        for (int i = 0; i < out.length; i++) {
            out[i] = switch (info.dtype()) {
                case I8 -> segment.get(ValueLayout.JAVA_BYTE, i);
                case U8, BOOL -> segment.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
                case I16 -> segment.get(I16, 2L * i);
                case U16 -> segment.get(I16, 2L * i) & 0xFFFF;
                case I32, U32 -> segment.get(I32, 4L * i);
                case I64 -> Math.toIntExact(segment.get(I64, 8L * i));
                default -> throw new SafetensorsException(file, name(), "dtype " + dtype() + " is not an integer type");
            };
        }
        return out;
    }

    public long[] toLongArray() {
        if (info.dtype() != DType.I64 && info.dtype() != DType.U64) {
            int[] ints = toIntArray();
            long[] out = new long[ints.length];
            for (int i = 0; i < ints.length; i++) {
                out[i] = ints[i];
            }
            return out;
        }
        long[] out = new long[checkedLength()];
        for (int i = 0; i < out.length; i++) {
            out[i] = segment.get(I64, 8L * i);
        }
        return out;
    }

    /** Fails with a message naming this tensor unless its dtype and shape are as given (-1 matches any size). */
    public Tensor expect(DType dtype, long... shape) {
        if (info.dtype() != dtype) {
            throw new SafetensorsException(file, name(), "expected dtype " + dtype + " but found " + info.dtype());
        }
        return expectShape(shape);
    }

    public Tensor expectShape(long... shape) {
        long[] actual = info.shape();
        boolean ok = actual.length == shape.length;
        for (int i = 0; ok && i < shape.length; i++) {
            ok = shape[i] < 0 || shape[i] == actual[i];
        }
        if (!ok) {
            throw new SafetensorsException(file, name(), "expected shape " + java.util.Arrays.toString(shape).replace("-1", "*")
                    + " but found " + info.shapeString());
        }
        return this;
    }

    private int checkedLength() {
        long n = info.elementCount();
        if (n > Integer.MAX_VALUE - 8) {
            throw new SafetensorsException(file, name(), "too large (" + n + " elements) to copy onto the heap");
        }
        return (int) n;
    }
}
