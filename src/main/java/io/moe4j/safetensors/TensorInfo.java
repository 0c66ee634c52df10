package io.moe4j.safetensors;

import java.util.Arrays;

/**
 * One header entry: a tensor's name, type, shape and byte span within the data buffer (offsets relative to
 * the end of the header, as the format defines them).
 */
public record TensorInfo(String name, DType dtype, long[] shape, long begin, long end) {

    public TensorInfo {
        shape = shape.clone();
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    public int rank() {
        return shape.length;
    }

    public long dim(int axis) {
        return shape[axis < 0 ? shape.length + axis : axis];
    }

    public long elementCount() {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    public long byteSize() {
        return end - begin;
    }

    public String shapeString() {
        return Arrays.toString(shape);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorInfo t && name.equals(t.name) && dtype == t.dtype
                && Arrays.equals(shape, t.shape) && begin == t.begin && end == t.end;
    }

    @Override
    public int hashCode() {
        return name.hashCode() * 31 + Arrays.hashCode(shape);
    }

    @Override
    public String toString() {
        return name + " " + dtype + " " + shapeString();
    }
}
