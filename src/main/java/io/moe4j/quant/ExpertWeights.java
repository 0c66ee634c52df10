package io.moe4j.quant;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;

/**
 * Everything a backend needs about one MoE layer's experts, and nothing about files or configs: the canonical
 * fused weights w13 [E, 2I, H] (or [E, I, H] when not gated) and w2 [E, H, I], their biases, the activation and
 * how activations are quantized before each GEMM.
 *
 * @param numExperts  local experts held here
 * @param w13Bias     [E·rows(w13)] or null
 * @param w2Bias      [E·H] or null
 * @param swigluLimit clamp limit of {@link Activation#SWIGLU_OAI}
 * @param a13         quantize-dequantize applied to each token's input of GEMM1
 * @param a2          quantize-dequantize applied to each token's input of GEMM2 (after the activation)
 * @param expertMap   global expert id → local index, −1 where the expert lives elsewhere; null when all are local
 */
public record ExpertWeights(QuantScheme scheme, int numExperts, int hidden, int intermediate,
                            ExpertMatrix w13, ExpertMatrix w2, float[] w13Bias, float[] w2Bias,
                            GateLayout gateLayout, Activation activation, float swigluLimit,
                            ActivationQuant a13, ActivationQuant a2, int[] expertMap) {

    public ExpertWeights {
        int w13Rows = gateLayout == GateLayout.NONE ? intermediate : 2 * intermediate;
        if (w13.experts() != numExperts || w13.rows() != w13Rows || w13.cols() != hidden) {
            throw new IllegalArgumentException("w13 is " + w13.experts() + "×" + w13.rows() + "×" + w13.cols()
                    + ", expected " + numExperts + "×" + w13Rows + "×" + hidden);
        }
        if (w2.experts() != numExperts || w2.rows() != hidden || w2.cols() != intermediate) {
            throw new IllegalArgumentException("w2 is " + w2.experts() + "×" + w2.rows() + "×" + w2.cols()
                    + ", expected " + numExperts + "×" + hidden + "×" + intermediate);
        }
        if (activation.gated() == (gateLayout == GateLayout.NONE)) {
            throw new IllegalArgumentException(activation + " does not fit gate layout " + gateLayout);
        }
    }

    /** Local index of a global expert id, or −1 if it is not held here. */
    public int localExpert(int globalExpert) {
        if (expertMap == null) {
            return globalExpert < numExperts ? globalExpert : -1;
        }
        return globalExpert < expertMap.length ? expertMap[globalExpert] : -1;
    }

    /** Global experts the router chooses among. */
    public int globalExperts() {
        return expertMap == null ? numExperts : expertMap.length;
    }

    /** Packed bytes (codes and scales) of one expert's w13 and w2 together. */
    public long bytesPerExpert() {
        return w13.bytesPerExpert() + w2.bytesPerExpert();
    }

    public ExpertWeights withExpertMap(int[] map) {
        return new ExpertWeights(scheme, numExperts, hidden, intermediate, w13, w2, w13Bias, w2Bias, gateLayout,
                activation, swigluLimit, a13, a2, map);
    }
}
