package io.moe4j.quant.method;

import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsException;
import io.moe4j.safetensors.Tensor;

import java.util.Arrays;
import java.util.stream.Collectors;

/** Checks of one tensor against what a method expects of it, failing with a message that names the tensor. */
final class TensorChecks {
    private TensorChecks() {
    }

    static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }

    /** The tensor, checked for one of the dtypes and the shape (−1 matches any size). */
    static Tensor expect(Tensor t, long[] shape, DType... dtypes) {
        if (Arrays.stream(dtypes).noneMatch(d -> d == t.dtype())) {
            throw new SafetensorsException(t.file(), t.name(), "expected dtype "
                    + Arrays.stream(dtypes).map(Enum::name).collect(Collectors.joining(" or ")) + " but found " + t.dtype());
        }
        return t.expectShape(shape);
    }

    /** A one-element float tensor (shape [] or [1]) as a float. */
    static float scalar(Tensor t) {
        if (t.dtype() != DType.F32 && t.dtype() != DType.BF16 && t.dtype() != DType.F16 && t.dtype() != DType.F64) {
            throw new SafetensorsException(t.file(), t.name(), "expected dtype F32 but found " + t.dtype());
        }
        requireScalarShape(t);
        return t.getFloat(0);
    }

    /** A one-element integer tensor (shape [] or [1]) as an int. */
    static int intScalar(Tensor t) {
        requireScalarShape(t);
        return t.toIntArray()[0];
    }

    private static void requireScalarShape(Tensor t) {
        long[] s = t.shape();
        if (t.elementCount() != 1 || s.length > 1) {
            throw new SafetensorsException(t.file(), t.name(), "expected a scalar (shape [] or [1]) but found "
                    + Arrays.toString(s));
        }
    }
}
