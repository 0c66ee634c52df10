package io.moe4j.backend.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The dense linears' products ({@link CpuMatrices}) on bf16 weights: a batch's rows against each row alone. */
class CpuMatricesTest {

    /**
     * Up to the fused kernels' few tokens (taken in pairs on BF16) each token's sums have the same bits as that token
     * multiplied alone, so a batched decode step gives each sequence what it gets alone; every batch, the fused and
     * the decode-then-dot paths alike, matches the products in float64. Rows not a whole number of panels.
     */
    @Test
    void bf16TokensInABatchGetTheBitsTheyGetAlone() {
        int rows = 40;
        int cols = 96;
        SplittableRandom rnd = new SplittableRandom(17);
        try (Arena arena = Arena.ofShared(); CpuMatrices matrices = new CpuMatrices(2)) {
            MemorySegment codes = arena.allocate(2L * rows * cols, 2);
            float[] w = new float[rows * cols];
            for (int i = 0; i < w.length; i++) {
                short bits = (short) (Float.floatToRawIntBits((float) rnd.nextGaussian()) >>> 16);
                codes.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, bits);
                w[i] = Float.intBitsToFloat(bits << 16);
            }
            CpuMatrices.Packed packed = matrices.pack(ExpertMatrix.dense(1, rows, cols, CodeType.BF16, codes), arena);
            for (int n = 1; n <= 6; n++) {
                float[] x = new float[n * cols];
                for (int i = 0; i < x.length; i++) {
                    x[i] = (float) rnd.nextGaussian();
                }
                float[] y = new float[n * rows];
                matrices.multiply(packed, x, n, y);
                for (int t = 0; t < n; t++) {
                    float[] one = new float[rows];
                    matrices.multiply(packed, Arrays.copyOfRange(x, t * cols, (t + 1) * cols), 1, one);
                    float[] got = Arrays.copyOfRange(y, t * rows, (t + 1) * rows);
                    if (n <= VectorKernels.FUSED_TOKENS && KernelSelection.select().name().equals("vector")) {
                        assertThat(got).as("%d tokens, token %d", n, t).containsExactly(one);
                    }
                    for (int r = 0; r < rows; r++) {
                        double want = 0;
                        double scale = 0;
                        for (int c = 0; c < cols; c++) {
                            double p = (double) w[r * cols + c] * x[t * cols + c];
                            want += p;
                            scale += Math.abs(p);
                        }
                        assertThat((double) got[r]).as("%d tokens, token %d, row %d", n, t, r)
                                .isCloseTo(want, org.assertj.core.data.Offset.offset(1e-6 * scale));
                    }
                }
            }
        }
    }
}
