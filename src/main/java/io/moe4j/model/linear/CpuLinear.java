package io.moe4j.model.linear;

import io.moe4j.backend.cpu.CpuMatrices;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.quant.QuantScheme;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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
        Shapes.check(module, x, tokens, inFeatures(), y, outFeatures());
        matrices.multiply(packed, prepared(x, tokens), tokens, y);
        LinearBias.add(bias, y, tokens, outFeatures());
    }

    /** x as the kernels take it: each token quantize-dequantized by the scheme's input rule, tiny values zeroed. */
    private float[] prepared(float[] x, int tokens) {
        int in = inFeatures();
        float[] q = Arrays.copyOf(x, tokens * in);
        for (int t = 0; t < tokens; t++) {
            input.qdqInPlace(q, t * in, in, 0);
            flushTiny(q, t * in, in);
        }
        return q;
    }

    /**
     * Whether these linears can run as one loop of the workers ({@link #forwardTogether}): all on the cpu kernels of
     * one set of matrices. {@code -Dmoe4j.cpu.fuseLinears=false} runs them one loop each, to measure.
     */
    static boolean together(List<? extends Linear> linears) {
        if (!FUSE || linears.size() < 2 || !(linears.getFirst() instanceof CpuLinear first)) {
            return false;
        }
        for (Linear l : linears) {
            if (!(l instanceof CpuLinear c) || c.matrices != first.matrices) {
                return false;
            }
        }
        return true;
    }

    private static final boolean FUSE = Boolean.parseBoolean(System.getProperty("moe4j.cpu.fuseLinears", "true"));

    /** {@link #forward} of each linear on the same x, their products in one loop (the caller checked together). */
    static void forwardTogether(List<? extends Linear> linears, float[] x, int tokens, List<float[]> ys) {
        List<CpuMatrices.Packed> packed = new ArrayList<>();
        List<float[]> xs = new ArrayList<>();
        for (int i = 0; i < linears.size(); i++) {
            CpuLinear l = (CpuLinear) linears.get(i);
            Shapes.check(l.module, x, tokens, l.inFeatures(), ys.get(i), l.outFeatures());
            packed.add(l.packed);
            xs.add(l.prepared(x, tokens));
        }
        CpuLinear first = (CpuLinear) linears.getFirst();
        first.matrices.multiplyAll(packed, xs, tokens, ys);
        for (int i = 0; i < linears.size(); i++) {
            CpuLinear l = (CpuLinear) linears.get(i);
            LinearBias.add(l.bias, ys.get(i), tokens, l.outFeatures());
        }
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
