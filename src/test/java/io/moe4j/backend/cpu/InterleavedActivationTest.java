package io.moe4j.backend.cpu;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A gate|up row interleaved (gate j at 2j, up j at 2j + 1) activates to the bits of the same row concatenated (gate j
 * at j, up j at intermediate + j), with either kernel set: the vector kernels split the pairs in registers, and
 * widths below, at and past the vector length reach both their vector loop and their tail.
 */
class InterleavedActivationTest {

    @ParameterizedTest
    @MethodSource("io.moe4j.backend.cpu.KernelsUnderTest#names")
    void interleavedRowsActivateAsConcatenatedOnes(String name) {
        CpuKernels k = KernelsUnderTest.get(name);
        SplittableRandom rnd = new SplittableRandom(7);
        for (Activation a : new Activation[] {Activation.SILU_AND_MUL, Activation.SWIGLU_OAI}) {
            for (int inter : new int[] {1, 7, 8, 16, 17, 40, 2880}) {
                int off = 3;
                float[] interleaved = new float[off + 2 * inter];
                float[] concatenated = new float[off + 2 * inter];
                for (int j = 0; j < inter; j++) {
                    float g = (float) (rnd.nextGaussian() * 4);
                    float u = (float) (rnd.nextGaussian() * 4);
                    interleaved[off + 2 * j] = g;
                    interleaved[off + 2 * j + 1] = u;
                    concatenated[off + j] = g;
                    concatenated[off + inter + j] = u;
                }
                float[] got = new float[inter + 2];
                float[] want = new float[inter + 2];
                k.activate(a, GateLayout.INTERLEAVED, 7f, inter, interleaved, off, got, 2);
                k.activate(a, GateLayout.CONCATENATED, 7f, inter, concatenated, off, want, 2);
                assertThat(got).as("%s %s, intermediate %d", name, a, inter).containsExactly(want);
                assertThat(want[2]).isNotZero();
            }
        }
    }
}
