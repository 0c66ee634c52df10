package io.moe4j.model;

import io.moe4j.model.linear.DenseForm;
import io.moe4j.model.linear.Linear;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Optional;

/**
 * An unquantized linear: y = x · Wᵀ (+ b) on a bf16, f16 or f32 weight [out, in] read straight from the mapped
 * checkpoint. Each weight row is decoded once per call (subnormals flushed) and dotted with every token. The exact
 * form sums each dot in order on one thread; the fast form sums with SIMD lanes and spreads the rows over threads.
 */
public final class UnquantizedLinear implements Linear {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** The machine's widest float vector (16 lanes with AVX-512), as the cpu kernels use. */
    private static final VectorSpecies<Float> LANES = LaneSums.S;
    /** Rows handed to a thread at a time, at most (fewer where that leaves a worker without four blocks). */
    private static final int ROWS_PER_TASK = 64;

    private final Tensor weight;
    private final float[] bias;
    private final int in;
    private final int out;
    private final Parallel parallel;

    /**
     * @param parallel the threads for the fast form, or null for the exact form (the emulation backend's)
     */
    public UnquantizedLinear(Tensor weight, float[] bias, int in, int out, Parallel parallel) {
        if (weight.dtype() != DType.BF16 && weight.dtype() != DType.F16 && weight.dtype() != DType.F32) {
            throw new IllegalArgumentException(weight.name() + ": " + weight.dtype() + " is not BF16, F16 or F32");
        }
        this.weight = weight;
        this.bias = bias;
        this.in = in;
        this.out = out;
        this.parallel = parallel;
    }

    @Override
    public int inFeatures() {
        return in;
    }

    @Override
    public int outFeatures() {
        return out;
    }

    @Override
    public void forward(float[] x, int tokens, float[] y) {
        float[] xs = FloatMath.withoutSubnormals(x, tokens * in);
        if (parallel == null) {
            rows(xs, tokens, y, 0, out, false);
            return;
        }
        // Equal row blocks, at least four a worker so that a slow worker's share is taken by the others.
        int perTask = Math.max(1, Math.min(ROWS_PER_TASK, Math.ceilDiv(out, 4 * parallel.threads())));
        int tasks = Math.ceilDiv(out, perTask);
        parallel.forEach(tasks, (long) perTask * in * tokens,
                task -> rows(xs, tokens, y, task * perTask, Math.min(out, (task + 1) * perTask), true));
    }

    private void rows(float[] x, int tokens, float[] y, int from, int to, boolean simd) {
        float[] row = new float[in];
        for (int o = from; o < to; o++) {
            decodeRow(o, row);
            float b = bias == null ? 0f : bias[o];
            for (int t = 0; t < tokens; t++) {
                float dot = simd ? simdDot(x, t * in, row) : FloatMath.dot(x, t * in, row, 0, in);
                y[t * out + o] = dot + b;
            }
        }
    }

    private void decodeRow(int o, float[] row) {
        MemorySegment s = weight.segment();
        long base = (long) o * in;
        switch (weight.dtype()) {
            case BF16 -> {
                for (int i = 0; i < in; i++) {
                    int bits = s.get(I16, 2 * (base + i)) & 0xFFFF;
                    // a zero exponent is zero or subnormal: both become +0
                    row[i] = (bits & 0x7F80) == 0 ? 0f : Float.intBitsToFloat(bits << 16);
                }
            }
            case F16 -> {
                for (int i = 0; i < in; i++) {
                    row[i] = FloatMath.flushSubnormal(Float.float16ToFloat(s.get(I16, 2 * (base + i))));
                }
            }
            default -> {
                for (int i = 0; i < in; i++) {
                    row[i] = FloatMath.flushSubnormal(s.get(F32, 4 * (base + i)));
                }
            }
        }
    }

    private float simdDot(float[] x, int off, float[] row) {
        FloatVector acc = FloatVector.zero(LANES);
        int i = 0;
        for (int end = LANES.loopBound(in); i < end; i += LANES.length()) {
            acc = FloatVector.fromArray(LANES, x, off + i).fma(FloatVector.fromArray(LANES, row, i), acc);
        }
        float s = LaneSums.sum(acc);
        for (; i < in; i++) {
            s += x[off + i] * row[i];
        }
        return s;
    }

    /**
     * The weight decoded row by row (subnormals flushed, as forward decodes it); inputs without subnormals, as
     * forward takes them.
     */
    @Override
    public Optional<DenseForm> denseForm() {
        if (bias != null) {
            return Optional.empty();
        }
        float[] dense = new float[Math.multiplyExact(in, out)];
        float[] row = new float[in];
        for (int o = 0; o < out; o++) {
            decodeRow(o, row);
            System.arraycopy(row, 0, dense, o * in, in);
        }
        return Optional.of(new DenseForm(in, out, dense, FloatMath::flushSubnormals));
    }

    @Override
    public long weightBytes() {
        return weight.info().byteSize() + (bias == null ? 0 : 4L * bias.length);
    }

    @Override
    public String describe() {
        return (parallel == null ? "exact" : "simd") + " unquantized " + weight.dtype() + " [" + out + ", " + in + "]";
    }
}
