package io.moe4j.model.linear;

import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsException;
import io.moe4j.safetensors.Tensor;

/** The bias of a linear module, {@code module + ".bias"} [out] in BF16, F16 or F32, as float32. */
public final class LinearBias {
    private LinearBias() {
    }

    /** The bias, or null when {@code bias} is false; fails naming the tensor when it is missing or mis-shaped. */
    public static float[] load(Checkpoint checkpoint, String module, int outFeatures, boolean bias) {
        if (!bias) {
            return null;
        }
        Tensor t = checkpoint.tensor(module + ".bias");
        if (t.dtype() != DType.BF16 && t.dtype() != DType.F16 && t.dtype() != DType.F32) {
            throw new SafetensorsException(t.file(), t.name(), "expected dtype BF16, F16 or F32 but found " + t.dtype());
        }
        t.expectShape(outFeatures);
        return t.toFloatArray();
    }

    /** y[t·out + r] += bias[r] for every token. */
    static void add(float[] bias, float[] y, int tokens, int out) {
        if (bias == null) {
            return;
        }
        for (int t = 0; t < tokens; t++) {
            int base = t * out;
            for (int r = 0; r < out; r++) {
                y[base + r] += bias[r];
            }
        }
    }
}
