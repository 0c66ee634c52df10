package io.moe4j.model;

import io.moe4j.format.ElementFormat;
import io.moe4j.format.Fp8Quant;
import io.moe4j.format.IntPacking;
import io.moe4j.model.linear.DenseForm;
import io.moe4j.model.linear.Linear;
import io.moe4j.model.linear.LinearFactory;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * A test-only reference for the quantized linears of three fixtures, so that their decoders (Mixtral, DeepSeek MLA,
 * Qwen3 q/k norms) are checked against transformers before the quantized linear factory exists: each weight is
 * dequantized whole into floats (FP8 per tensor or per 128×128 block, {@code weight_scale} or the hub's
 * {@code weight_scale_inv}; compressed-tensors pack-quantized INT4 with group scales), and FP8 inputs are
 * quantize-dequantized by the static {@code input_scale}, else per token in groups of 128. Unquantized modules go
 * through {@link UnquantizedLinears}; any other format fails.
 */
final class ReferenceLinears implements LinearFactory {
    private static final float[] E4M3 = ElementFormat.E4M3FN.decodeTable();
    private static final int BLOCK = 128;

    private final Checkpoint checkpoint;
    private final UnquantizedLinears unquantized;

    ReferenceLinears(Checkpoint checkpoint) {
        this.checkpoint = checkpoint;
        this.unquantized = new UnquantizedLinears(checkpoint, null);
    }

    static LinearProvider provider() {
        return (checkpoint, config, backend, threads) -> new ReferenceLinears(checkpoint);
    }

    @Override
    public Linear load(String module, int in, int out, boolean bias) {
        float[] b = bias ? checkpoint.tensor(module + ".bias").toFloatArray() : null;
        if (checkpoint.contains(module + ".weight_packed")) {
            return new Dequantized(in, out, int4(module, in, out), b, null, false);
        }
        Tensor w = checkpoint.tensor(module + ".weight");
        if (w.dtype() != DType.F8_E4M3) {
            return unquantized.load(module, in, out, bias);
        }
        Float inputScale = checkpoint.find(module + ".input_scale").map(t -> t.toFloatArray()[0]).orElse(null);
        return new Dequantized(in, out, fp8(module, w, in, out), b, inputScale, true);
    }

    private float[] fp8(String module, Tensor w, int in, int out) {
        w.expectShape(out, in);
        Tensor scale = checkpoint.find(module + ".weight_scale")
                .orElseGet(() -> checkpoint.tensor(module + ".weight_scale_inv"));
        float[] s = scale.toFloatArray();
        boolean blocks = scale.shape().length == 2;
        int blockCols = (in + BLOCK - 1) / BLOCK;
        float[] dense = new float[out * in];
        for (int o = 0; o < out; o++) {
            for (int i = 0; i < in; i++) {
                int code = w.segment().get(ValueLayout.JAVA_BYTE, (long) o * in + i) & 0xFF;
                float sc = blocks ? s[(o / BLOCK) * blockCols + i / BLOCK] : s[0];
                dense[o * in + i] = (float) ((double) E4M3[code] * sc);
            }
        }
        return dense;
    }

    private float[] int4(String module, int in, int out) {
        int[] words = checkpoint.tensor(module + ".weight_packed").expectShape(out, in / 8).toIntArray();
        Tensor scale = checkpoint.tensor(module + ".weight_scale");
        float[] s = scale.toFloatArray();
        int groups = (int) scale.shape()[1];
        int groupSize = in / groups;
        float[] dense = new float[out * in];
        for (int o = 0; o < out; o++) {
            for (int i = 0; i < in; i++) {
                int q = IntPacking.unpack(words[o * (in / 8) + i / 8], 4, i % 8);
                dense[o * in + i] = q * s[o * groups + i / groupSize];
            }
        }
        return dense;
    }

    /** y = qdq(x) · Wᵀ + b in double, with W dequantized. */
    private record Dequantized(int inFeatures, int outFeatures, float[] weight, float[] bias, Float inputScale,
                               boolean fp8Inputs) implements Linear {
        @Override
        public void forward(float[] x, int tokens, float[] y) {
            int in = inFeatures;
            float[] q = Arrays.copyOf(x, tokens * in);
            for (int t = 0; fp8Inputs && t < tokens; t++) {
                if (inputScale != null) {
                    Fp8Quant.qdqStatic(q, t * in, in, inputScale);
                } else {
                    Fp8Quant.qdqGroup(q, t * in, in, BLOCK);
                }
            }
            for (int t = 0; t < tokens; t++) {
                for (int o = 0; o < outFeatures; o++) {
                    double acc = bias == null ? 0 : bias[o];
                    for (int i = 0; i < in; i++) {
                        acc += (double) q[t * in + i] * weight[o * in + i];
                    }
                    y[t * outFeatures + o] = (float) acc;
                }
            }
        }

        /** The same weight and input rule, for MLA's absorbed decode. */
        @Override
        public java.util.Optional<DenseForm> denseForm() {
            if (bias != null) {
                return java.util.Optional.empty();
            }
            return java.util.Optional.of(new DenseForm(inFeatures, outFeatures, weight, (x, off, len) -> {
                if (!fp8Inputs) {
                    return;
                }
                if (inputScale != null) {
                    Fp8Quant.qdqStatic(x, off, len, inputScale);
                } else {
                    Fp8Quant.qdqGroup(x, off, len, BLOCK);
                }
            }));
        }

        @Override
        public long weightBytes() {
            return 4L * weight.length;
        }

        @Override
        public String describe() {
            return "test reference, dequantized";
        }
    }
}
