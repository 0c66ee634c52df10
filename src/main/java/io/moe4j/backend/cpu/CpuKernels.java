package io.moe4j.backend.cpu;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.routing.Router;

/**
 * The numerical work of the CPU experts, in one implementation per instruction set: {@link ScalarKernels} in plain
 * Java, and {@code VectorKernels} on the Java Vector API, loaded only when the JVM has a usable one (Lucene's
 * vectorization-provider pattern; see {@link KernelSelection}). Both read the same {@link PanelMatrix} and compute
 * the same sums in float32; tests run both against the float64 reference.
 */
interface CpuKernels {

    /** "vector" or "scalar". */
    String name();

    /**
     * The inputs of {@code n} tokens, x[xOff + t·cols + c], laid out for multiplying with expert e of m. Called once
     * per expert and batch; the result is shared by the threads that multiply row blocks.
     */
    Inputs prepare(PanelMatrix m, int expert, float[] x, int xOff, int n);

    /**
     * y[yOff + t·yStride + r] = Σ_c W[e][r][c] · x_t[c] for rows [rowFrom, rowTo) (rowFrom a multiple of {@link PanelMatrix#LANES}) and the
     * n tokens of in. {@code scratch} belongs to the calling worker and {@link Scratch#fit fits} m.
     */
    void multiply(PanelMatrix m, int expert, int rowFrom, int rowTo, Inputs in, float[] y, int yOff, int yStride,
                  Scratch scratch);

    /**
     * The activation between the GEMMs for one token: out[outOff + j], j < intermediate, from the GEMM1 outputs
     * h[hOff ...] split into gate and up rows by the layout (or taken as they are for {@link GateLayout#NONE}).
     */
    void activate(Activation activation, GateLayout layout, float limit, int intermediate, float[] h, int hOff,
                  float[] out, int outOff);

    /**
     * out[outOff + i] += scale · y[yOff + i] for i &lt; n, the product rounded to float before the sum (the bits of the
     * plain Java loop): a wave's expert outputs into the layer's output, a bias into a GEMM's output (scale 1).
     */
    void addScaled(float scale, float[] y, int yOff, float[] out, int outOff, int n);

    /** The router's logits on these instructions, for {@link CpuRouter} (a copy of its weights, made once). */
    RouterLogits routerLogits(Router router);
}
