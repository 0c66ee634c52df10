package io.moe4j.quant;

import io.moe4j.format.ElementFormat;
import io.moe4j.format.Fp8Quant;
import io.moe4j.format.Int8Quant;
import io.moe4j.format.MxCodec;
import io.moe4j.format.Nvfp4Codec;
import java.util.Arrays;

/**
 * Quantize-dequantize of one token's activation vector before a GEMM, with the exact numerics of its scheme
 * (see the conformance README). Static scales are per local expert, since checkpoints store one per expert
 * (after the post-load rules they are usually all equal).
 */
public sealed interface ActivationQuant {

    ActivationFormat format();

    /** Quantize-dequantize x[off, off+len) in place, as the input of local expert {@code expert}. */
    void qdqInPlace(float[] x, int off, int len, int expert);

    ActivationQuant NONE = new None();

    /**
     * Whether {@code a} and {@code b} quantize an input identically: the same rule with the same static scales
     * (compared by value, which the records' own equality does not do for their arrays).
     */
    static boolean sameRule(ActivationQuant a, ActivationQuant b) {
        return switch (a) {
            case Fp8Static(float[] s) when b instanceof Fp8Static(float[] t) -> Arrays.equals(s, t);
            case Nvfp4(float[] s) when b instanceof Nvfp4(float[] t) -> Arrays.equals(s, t);
            case Int8Static(float[] s, int[] z) when b instanceof Int8Static(float[] t, int[] y) ->
                    Arrays.equals(s, t) && Arrays.equals(z, y);
            default -> a.equals(b);
        };
    }

    record None() implements ActivationQuant {
        public ActivationFormat format() {
            return ActivationFormat.NONE;
        }

        public void qdqInPlace(float[] x, int off, int len, int expert) {
        }
    }

    /** OCP MX, dynamic: shared E8M0 scale per 32 channels. */
    record Mx(ElementFormat element) implements ActivationQuant {
        public ActivationFormat format() {
            return switch (element) {
                case E2M1 -> ActivationFormat.MXFP4;
                case E3M2 -> ActivationFormat.MXFP6_E3M2;
                case E2M3 -> ActivationFormat.MXFP6_E2M3;
                default -> throw new IllegalStateException(element + " is not an MX activation element");
            };
        }

        public void qdqInPlace(float[] x, int off, int len, int expert) {
            MxCodec.qdqInPlace(x, off, len, element);
        }
    }

    /** NVFP4 with a static global scale per expert and dynamic E4M3 block scales per 16 channels. */
    record Nvfp4(float[] globalScale) implements ActivationQuant {
        public ActivationFormat format() {
            return ActivationFormat.NVFP4;
        }

        public void qdqInPlace(float[] x, int off, int len, int expert) {
            Nvfp4Codec.qdqInPlace(x, off, len, globalScale[expert]);
        }
    }

    /** FP8 E4M3 with a static per-tensor scale per expert. */
    record Fp8Static(float[] scale) implements ActivationQuant {
        public ActivationFormat format() {
            return ActivationFormat.FP8_STATIC;
        }

        public void qdqInPlace(float[] x, int off, int len, int expert) {
            Fp8Quant.qdqStatic(x, off, len, scale[expert]);
        }
    }

    /** FP8 E4M3, dynamic scale per token. */
    record Fp8PerToken() implements ActivationQuant {
        public ActivationFormat format() {
            return ActivationFormat.FP8_TOKEN;
        }

        public void qdqInPlace(float[] x, int off, int len, int expert) {
            Fp8Quant.qdqPerToken(x, off, len);
        }
    }

    /** FP8 E4M3, dynamic scale per token per group of channels (128 for block-FP8 checkpoints). */
    record Fp8Group(int group) implements ActivationQuant {
        public ActivationFormat format() {
            return ActivationFormat.FP8_GROUP128;
        }

        public void qdqInPlace(float[] x, int off, int len, int expert) {
            Fp8Quant.qdqGroup(x, off, len, group);
        }
    }

    /** INT8 with a static per-tensor scale (and zero point) per expert. */
    record Int8Static(float[] scale, int[] zeroPoint) implements ActivationQuant {
        public ActivationFormat format() {
            return ActivationFormat.INT8_STATIC;
        }

        public void qdqInPlace(float[] x, int off, int len, int expert) {
            Int8Quant.qdqStatic(x, off, len, scale[expert], zeroPoint == null ? 0 : zeroPoint[expert]);
        }
    }

    /** INT8, dynamic symmetric scale per token. */
    record Int8PerToken() implements ActivationQuant {
        public ActivationFormat format() {
            return ActivationFormat.INT8_TOKEN;
        }

        public void qdqInPlace(float[] x, int off, int len, int expert) {
            Int8Quant.qdqPerToken(x, off, len);
        }
    }
}
