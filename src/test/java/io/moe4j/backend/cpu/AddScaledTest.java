package io.moe4j.backend.cpu;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link CpuKernels#addScaled} gives the plain loop's bits (the product rounded, then the sum) with either kernel
 * set, for lengths around the vector width and odd offsets, and leaves the values outside its range alone.
 */
class AddScaledTest {

    @ParameterizedTest
    @MethodSource("io.moe4j.backend.cpu.KernelsUnderTest#names")
    void givesThePlainLoopsBits(String name) {
        CpuKernels k = KernelsUnderTest.get(name);
        SplittableRandom rnd = new SplittableRandom(41);
        for (int n : new int[] {0, 1, 7, 15, 16, 17, 31, 33, 100, 2049}) {
            float[] y = new float[n + 9];
            float[] out = new float[n + 12];
            for (int i = 0; i < y.length; i++) {
                y[i] = (float) (rnd.nextGaussian() * Math.scalb(1.0, rnd.nextInt(-20, 20)));
            }
            for (int i = 0; i < out.length; i++) {
                out[i] = (float) rnd.nextGaussian();
            }
            float scale = (float) rnd.nextGaussian();
            float[] want = out.clone();
            for (int i = 0; i < n; i++) {
                want[5 + i] += scale * y[3 + i];
            }
            k.addScaled(scale, y, 3, out, 5, n);
            assertThat(out).as("%s, n = %d", name, n).containsExactly(want);
        }
    }
}
