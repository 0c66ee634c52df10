package io.moe4j.model.linear;

import io.moe4j.backend.cpu.CpuMatrices;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.quant.QuantScheme;

import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.Optional;

/**
 * A linear on the CPU backend's kernels: the weight repacked once into their panel layout (codes at checkpoint
 * width), each token's input quantize-dequantized by the scheme's rule exactly as the emulation does, then the fused
 * GEMV (or, for larger batches, the decode-then-dot kernels) over blocks of output rows on the factory's shared
 * worker pool, in float32.
 *
 * <p>No subnormal reaches the kernels: unquantized weights are cleaned once ({@link SubnormalWeights}), and input
 * values below 2^-100 of their token's largest are set to zero (their share of any dot product is under float32's
 * resolution), so that the kernels' power-of-two input scaling cannot make them subnormal either.
 */
final class CpuLinear implements LoadedLinear {
    private static final float TINY = 0x1p-100f;

    private final String module;
    private final QuantScheme scheme;
    private final LinearWeights weights;
    private final io.moe4j.quant.ActivationQuant input;
    private final float[] bias;
    private final CpuMatrices matrices;
    private final CpuMatrices.Packed packed;

    CpuLinear(String module, LinearWeights w, float[] bias, CpuMatrices matrices, Arena arena) {
        this.module = module;
        this.scheme = w.scheme();
        this.weights = w;
        this.input = w.input();
        this.bias = bias;
        this.matrices = matrices;
        this.packed = matrices.pack(SubnormalWeights.normalize(w.weight(), arena), arena);
    }

    @Override
    public int inFeatures() {
        return packed.cols();
    }

    @Override
    public int outFeatures() {
        return packed.rows();
    }

    @Override
    public QuantScheme scheme() {
        return scheme;
    }

    @Override
    public void forward(float[] x, int tokens, float[] y) {
        int in = inFeatures();
        int out = outFeatures();
        Shapes.check(module, x, tokens, in, y, out);
        float[] q = Arrays.copyOf(x, tokens * in);
        for (int t = 0; t < tokens; t++) {
            input.qdqInPlace(q, t * in, in, 0);
            flushTiny(q, t * in, in);
        }
        matrices.multiply(packed, q, tokens, y);
        LinearBias.add(bias, y, tokens, out);
    }

    /** Zeros the values of x[off, off+len) below 2^-100 of its largest magnitude. */
    static void flushTiny(float[] x, int off, int len) {
        float amax = 0f;
        for (int i = off; i < off + len; i++) {
            amax = Math.max(amax, Math.abs(x[i]));
        }
        float floor = amax * TINY;
        for (int i = off; i < off + len; i++) {
            if (Math.abs(x[i]) < floor || Math.abs(x[i]) < Float.MIN_NORMAL) {
                x[i] = 0f * x[i];
            }
        }
    }

    /** The checkpoint's weight dequantized row by row (subnormals flushed); the input rule is forward's. */
    @Override
    public Optional<DenseForm> denseForm() {
        if (bias != null) {
            return Optional.empty();
        }
        int in = inFeatures();
        int out = outFeatures();
        float[] dense = new float[Math.multiplyExact(in, out)];
        float[] row = new float[in];
        for (int r = 0; r < out; r++) {
            MatrixDequantizer.row(weights.weight(), 0, r, row);
            for (int c = 0; c < in; c++) {
                dense[r * in + c] = Math.abs(row[c]) < Float.MIN_NORMAL ? 0f : row[c];
            }
        }
        return Optional.of(new DenseForm(in, out, dense, (x, off, len) -> {
            input.qdqInPlace(x, off, len, 0);
            flushTiny(x, off, len);
        }));
    }

    @Override
    public long weightBytes() {
        return packed.bytes() + (bias == null ? 0 : 4L * bias.length);
    }

    @Override
    public String describe() {
        return "cpu (" + matrices.kernels() + " kernels) " + scheme.name();
    }
}
