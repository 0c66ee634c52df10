package io.moe4j.model.linear;

import io.moe4j.format.E8m0;
import io.moe4j.format.ElementFormat;
import io.moe4j.format.Fp8Quant;
import io.moe4j.format.IntPacking;
import io.moe4j.format.MxCodec;
import io.moe4j.format.Nvfp4Codec;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.ValueLayout;

/**
 * A float64 linear computed straight from the checkpoint's tensors with the element decoders of
 * {@code io.moe4j.format}, by the case's scheme name, without any of the quant classes the factory uses: the weight
 * dequantized element by element, the input quantize-dequantized by the scheme's published rule.
 */
final class IndependentReference {
    private final double[][] w;
    private final double[] bias;
    private final String inputRule;
    private final float inputScale;

    private IndependentReference(double[][] w, double[] bias, String inputRule, float inputScale) {
        this.w = w;
        this.bias = bias;
        this.inputRule = inputRule;
        this.inputScale = inputScale;
    }

    static IndependentReference of(Checkpoint ckpt, String scheme, String module, int in, int out, boolean hasBias) {
        double[][] w = new double[out][in];
        String rule = "none";
        float inputScale = 0f;
        Tensor plain = ckpt.find(module + ".weight").orElse(null);
        if (plain != null && (plain.dtype() == DType.BF16 || plain.dtype() == DType.F16 || plain.dtype() == DType.F32)) {
            for (int r = 0; r < out; r++) {
                for (int c = 0; c < in; c++) {
                    w[r][c] = plain.getFloat((long) r * in + c);
                }
            }
        } else {
            switch (scheme) {
                case "ct_fp8_block", "hf_fp8_block" -> {
                    Tensor s = ckpt.tensor(module + (scheme.startsWith("hf") ? ".weight_scale_inv" : ".weight_scale"));
                    int cb = (int) s.shape()[1];
                    for (int r = 0; r < out; r++) {
                        for (int c = 0; c < in; c++) {
                            w[r][c] = e4m3(plain, (long) r * in + c) * s.getFloat((long) (r / 128) * cb + c / 128);
                        }
                    }
                    rule = "fp8_group128";
                }
                case "ct_fp8_tensor" -> {
                    double s = ckpt.tensor(module + ".weight_scale").getFloat(0);
                    for (int r = 0; r < out; r++) {
                        for (int c = 0; c < in; c++) {
                            w[r][c] = e4m3(plain, (long) r * in + c) * s;
                        }
                    }
                    rule = "fp8_static";
                    inputScale = ckpt.tensor(module + ".input_scale").getFloat(0);
                }
                case "ct_nvfp4" -> {
                    Tensor codes = ckpt.tensor(module + ".weight_packed");
                    Tensor s8 = ckpt.tensor(module + ".weight_scale");
                    double g = ckpt.tensor(module + ".weight_global_scale").getFloat(0);
                    for (int r = 0; r < out; r++) {
                        for (int c = 0; c < in; c++) {
                            int b = u8(codes, (long) r * (in / 2) + c / 2);
                            double e = ElementFormat.E2M1.decode((c & 1) == 0 ? b & 0xF : b >>> 4);
                            double scale = ElementFormat.E4M3FN.decode(u8(s8, (long) r * (in / 16) + c / 16));
                            w[r][c] = e * scale / g;
                        }
                    }
                    rule = "nvfp4";
                    inputScale = ckpt.tensor(module + ".input_global_scale").getFloat(0);
                }
                case "ct_w4a16_g128" -> {
                    Tensor packed = ckpt.tensor(module + ".weight_packed");
                    Tensor s = ckpt.tensor(module + ".weight_scale");
                    int[] words = packed.toIntArray();
                    int perRow = (int) packed.shape()[1];
                    int groups = (int) s.shape()[1];
                    int[] vals = new int[in];
                    for (int r = 0; r < out; r++) {
                        int[] rowWords = java.util.Arrays.copyOfRange(words, r * perRow, (r + 1) * perRow);
                        IntPacking.unpack(rowWords, 4, in, vals, 0);
                        for (int c = 0; c < in; c++) {
                            w[r][c] = vals[c] * (double) s.getFloat((long) r * groups + c / 128);
                        }
                    }
                }
                case "quark_w_mxfp4_a_mxfp4" -> {
                    Tensor codes = ckpt.tensor(module + ".weight");
                    Tensor s = ckpt.tensor(module + ".weight_scale");
                    for (int r = 0; r < out; r++) {
                        for (int c = 0; c < in; c++) {
                            int b = u8(codes, (long) r * (in / 2) + c / 2);
                            double e = ElementFormat.E2M1.decode((c & 1) == 0 ? b & 0xF : b >>> 4);
                            w[r][c] = e * E8m0.decode(u8(s, (long) r * (in / 32) + c / 32));
                        }
                    }
                    rule = "mxfp4";
                }
                default -> throw new IllegalArgumentException("no reference for quantized " + module + " of " + scheme);
            }
        }
        double[] bias = null;
        if (hasBias) {
            Tensor b = ckpt.tensor(module + ".bias");
            bias = new double[out];
            for (int r = 0; r < out; r++) {
                bias[r] = b.getFloat(r);
            }
        }
        return new IndependentReference(w, bias, rule, inputScale);
    }

    private static int u8(Tensor t, long i) {
        return t.segment().get(ValueLayout.JAVA_BYTE, i) & 0xFF;
    }

    private static double e4m3(Tensor t, long i) {
        return ElementFormat.E4M3FN.decode(u8(t, i));
    }

    /** y [tokens, out] in float64 for x [tokens, in]. */
    double[] forward(float[] x, int tokens) {
        int out = w.length;
        int in = w[0].length;
        double[] y = new double[tokens * out];
        for (int t = 0; t < tokens; t++) {
            float[] q = java.util.Arrays.copyOfRange(x, t * in, (t + 1) * in);
            switch (inputRule) {
                case "fp8_group128" -> Fp8Quant.qdqGroup(q, 0, in, 128);
                case "fp8_static" -> Fp8Quant.qdqStatic(q, 0, in, inputScale);
                case "nvfp4" -> Nvfp4Codec.qdqInPlace(q, 0, in, inputScale);
                case "mxfp4" -> MxCodec.qdqInPlace(q, 0, in, ElementFormat.E2M1);
                default -> {
                }
            }
            for (int r = 0; r < out; r++) {
                double acc = bias == null ? 0 : bias[r];
                for (int c = 0; c < in; c++) {
                    acc += w[r][c] * q[c];
                }
                y[t * out + r] = acc;
            }
        }
        return y;
    }
}
