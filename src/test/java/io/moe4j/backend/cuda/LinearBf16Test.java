package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link ModelOps#linearBf16} for batches against the same rows one token at a time: the CUDA-core batch kernels
 * (R rows a warp) give the one-token kernel's sums bit for bit; the tensor-core kernel (from
 * {@link ModelOps#MMA_LINEAR_TOKENS} tokens, x as two bf16 terms) agrees within its rounding; with bias, accumulation
 * into y, and rows that do not fill a tile.
 */
class LinearBf16Test {
    private static final int IN = 288; // a multiple of 32, not of 64
    private static final int OUT = 301; // not a multiple of 16 or of 8 warps' rows

    @BeforeEach
    void requireGpu() {
        CudaProbe probe = CudaRuntime.probe();
        assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    @Test
    void batchesGiveTheOneTokenSums() {
        SplittableRandom rnd = new SplittableRandom(3);
        float[] bias = random(rnd, OUT, 0.1);
        try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined();
                DeviceBuffer w = ops.upload(bf16Matrix(arena, rnd)); DeviceBuffer b = ops.upload(bias)) {
            for (int tokens : new int[] {2, 5, 9, 16, 37, 70}) {
                float[] x = random(rnd, tokens * IN, 1.0);
                float[] y0 = random(rnd, tokens * OUT, 1.0); // accumulated into
                try (DeviceBuffer dx = ops.upload(x); DeviceBuffer batch = ops.upload(y0);
                        DeviceBuffer single = ops.upload(y0)) {
                    ops.linearBf16(dx.pointer(), w.pointer(), b.pointer(), batch.pointer(), tokens, IN, OUT, true);
                    for (int t = 0; t < tokens; t++) {
                        ops.linearBf16(dx.pointer() + 4L * t * IN, w.pointer(), b.pointer(),
                                single.pointer() + 4L * t * OUT, 1, IN, OUT, true);
                    }
                    float[] got = ops.readFloats(batch, 0, tokens * OUT);
                    float[] want = ops.readFloats(single, 0, tokens * OUT);
                    if (tokens < ops.mmaLinearTokens()) {
                        assertThat(got).as("%d tokens on the CUDA cores", tokens).containsExactly(want);
                    } else {
                        assertThat(io.moe4j.testing.Norms.relL2(got, want)).as("%d tokens on tensor cores", tokens)
                                .isLessThanOrEqualTo(1e-5);
                    }
                }
            }
        }
    }

    /**
     * Wide outputs take more rows a warp (ModelOps keeps two blocks a multiprocessor): on a 132-multiprocessor H100 or
     * H200 these widths run R = 2, 4 and 8 below the tensor-core threshold, every one giving the one-token kernel's
     * sums bit for bit; from it the tensor-core kernels, 17000 rows taking the 128-row blocks that share x (two row
     * tiles a warp; 4300 and 9000 end inside a block's tiles), the others the 16-row blocks that split K.
     */
    @Test
    void wideOutputsWithSeveralRowsAWarpGiveTheOneTokenSums() {
        SplittableRandom rnd = new SplittableRandom(4);
        int in = 64;
        for (int out : new int[] {4300, 9000, 17000}) {
            try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined();
                    DeviceBuffer w = ops.upload(bf16Matrix(arena, rnd, out, in))) {
                for (int tokens : new int[] {2, 9, 40, 130}) {
                    float[] x = random(rnd, tokens * in, 1.0);
                    try (DeviceBuffer dx = ops.upload(x); DeviceBuffer batch = ops.allocate(4L * tokens * out);
                            DeviceBuffer single = ops.allocate(4L * tokens * out)) {
                        ops.linearBf16(dx.pointer(), w.pointer(), 0L, batch.pointer(), tokens, in, out, false);
                        for (int t = 0; t < tokens; t++) {
                            ops.linearBf16(dx.pointer() + 4L * t * in, w.pointer(), 0L,
                                    single.pointer() + 4L * t * out, 1, in, out, false);
                        }
                        float[] got = ops.readFloats(batch, 0, tokens * out);
                        float[] want = ops.readFloats(single, 0, tokens * out);
                        if (tokens < ops.mmaLinearTokens()) {
                            assertThat(got).as("%d rows, %d tokens", out, tokens).containsExactly(want);
                        } else { // 17000 rows: 128-row blocks fill the GPU; fewer rows: 16-row blocks splitting K
                            assertThat(io.moe4j.testing.Norms.relL2(got, want)).as("%d rows, %d tokens on tensor cores",
                                    out, tokens).isLessThanOrEqualTo(1e-5);
                        }
                    }
                }
            }
        }
    }

    /**
     * Tensor-core batches too small to fill the GPU, given memory for partial sums, split K over several blocks and add
     * the slices in a second kernel; with bias and accumulation, against one token at a time.
     */
    @Test
    void slicedBatchesGiveTheOneTokenSumsWithinRounding() {
        SplittableRandom rnd = new SplittableRandom(8);
        int in = 1024; // 32 chunks of 32 columns: room for several slices
        for (int out : new int[] {301, 2880}) {
            float[] bias = random(rnd, out, 0.1);
            try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined();
                    DeviceBuffer w = ops.upload(bf16Matrix(arena, rnd, out, in)); DeviceBuffer b = ops.upload(bias);
                    DeviceBuffer partials = ops.allocate(ModelOps.slicePartialsBytes(64, out))) {
                for (int tokens : new int[] {16, 37, 64}) {
                    float[] x = random(rnd, tokens * in, 1.0);
                    float[] y0 = random(rnd, tokens * out, 1.0);
                    try (DeviceBuffer dx = ops.upload(x); DeviceBuffer batch = ops.upload(y0);
                            DeviceBuffer single = ops.upload(y0)) {
                        ops.linearBf16(dx.pointer(), w.pointer(), b.pointer(), batch.pointer(), tokens, in, out, true,
                                partials.pointer(), partials.byteSize());
                        for (int t = 0; t < tokens; t++) {
                            ops.linearBf16(dx.pointer() + 4L * t * in, w.pointer(), b.pointer(),
                                    single.pointer() + 4L * t * out, 1, in, out, true);
                        }
                        float[] got = ops.readFloats(batch, 0, tokens * out);
                        float[] want = ops.readFloats(single, 0, tokens * out);
                        assertThat(io.moe4j.testing.Norms.relL2(got, want)).as("%d rows, %d tokens, sliced", out,
                                tokens).isLessThanOrEqualTo(1e-5);
                    }
                }
            }
        }
    }

    /**
     * One token's rows (a decode step's linears) stage up to {@link ModelOps#STAGED_GROUPS_MAX} groups of 8 weights in
     * shared memory and load the rest: rows shorter than that, as long and longer, with bias and accumulation, against
     * float64 sums on the host and, bit for bit, against the batch kernel's sums of the same rows.
     */
    @Test
    void oneTokenRowsOfEveryLengthAgainstTheHostAndTheBatchKernel() {
        SplittableRandom rnd = new SplittableRandom(11);
        int out = 77;
        for (int in : new int[] {8, 288, 8 * ModelOps.STAGED_GROUPS_MAX, 8 * ModelOps.STAGED_GROUPS_MAX + 8 * 37, 9000}) {
            float[] bias = random(rnd, out, 0.1);
            try (ModelOps ops = ModelOps.open(); Arena arena = Arena.ofConfined()) {
                MemorySegment matrix = bf16Matrix(arena, rnd, out, in);
                float[] x = random(rnd, 3 * in, 1.0);
                float[] y0 = random(rnd, 3 * out, 1.0);
                try (DeviceBuffer w = ops.upload(matrix); DeviceBuffer b = ops.upload(bias);
                        DeviceBuffer dx = ops.upload(x); DeviceBuffer batch = ops.upload(y0);
                        DeviceBuffer single = ops.upload(y0)) {
                    ops.linearBf16(dx.pointer(), w.pointer(), b.pointer(), batch.pointer(), 3, in, out, true);
                    for (int t = 0; t < 3; t++) {
                        ops.linearBf16(dx.pointer() + 4L * t * in, w.pointer(), b.pointer(),
                                single.pointer() + 4L * t * out, 1, in, out, true);
                    }
                    float[] got = ops.readFloats(single, 0, 3 * out);
                    assertThat(got).as("rows of %d, one token against three", in)
                            .containsExactly(ops.readFloats(batch, 0, 3 * out));
                    float[] want = new float[3 * out];
                    for (int t = 0; t < 3; t++) {
                        for (int r = 0; r < out; r++) {
                            double sum = 0;
                            for (int k = 0; k < in; k++) {
                                float wv = Float.intBitsToFloat(
                                        matrix.getAtIndex(ValueLayout.JAVA_SHORT, (long) r * in + k) << 16);
                                sum += (double) wv * x[t * in + k];
                            }
                            want[t * out + r] = (float) (y0[t * out + r] + sum + bias[r]);
                        }
                    }
                    assertThat(io.moe4j.testing.Norms.relL2(got, want)).as("rows of %d against float64", in)
                            .isLessThanOrEqualTo(1e-6);
                }
            }
        }
    }

    private static MemorySegment bf16Matrix(Arena arena, SplittableRandom rnd) {
        return bf16Matrix(arena, rnd, OUT, IN);
    }

    private static MemorySegment bf16Matrix(Arena arena, SplittableRandom rnd, int rows, int cols) {
        MemorySegment s = arena.allocate(2L * rows * cols);
        for (long i = 0; i < (long) rows * cols; i++) {
            float v = (float) (rnd.nextGaussian() * 0.05);
            s.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) (Float.floatToRawIntBits(v) >>> 16));
        }
        return s;
    }

    private static float[] random(SplittableRandom rnd, int n, double scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * scale);
        }
        return v;
    }
}
