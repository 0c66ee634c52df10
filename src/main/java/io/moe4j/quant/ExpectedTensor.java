package io.moe4j.quant;

import io.moe4j.safetensors.DType;

import java.util.Arrays;

/** A tensor a quant method needs: its name, dtype and shape (−1 where any size goes). */
public record ExpectedTensor(String name, DType dtype, long[] shape) {
    @Override
    public String toString() {
        return name + " " + dtype + " " + Arrays.toString(shape).replace("-1", "*");
    }
}
