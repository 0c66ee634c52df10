package io.moe4j.backend.cpu;

import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fused FP4 kernels read E8M0 scale bytes as float exponent fields, which is exact for bytes 1..254 only; a
 * layer holding the byte 0 (2^-127, a float subnormal) must take the decoded-scale path and still match the
 * reference. Scale bytes here are set far from the synthetic ones (1, 0, 160) on whole blocks of both matrices.
 */
class E8m0ScalesTest {
    private static final int EXPERTS = 3;

    @ParameterizedTest(name = "byte 0 present: {0}")
    @ValueSource(booleans = {false, true})
    void edgeScalesMatchReference(boolean withZeroByte) {
        try (Arena arena = Arena.ofShared()) {
            SyntheticWeights.Shape shape = Fixtures.shape(SyntheticScheme.MXFP4, GateLayout.INTERLEAVED, EXPERTS);
            ExpertWeights w = Fixtures.weights(SyntheticScheme.MXFP4, shape, 5, arena);
            setEvery(w.w13().blockScales().data(), 7, withZeroByte ? 0 : 1);
            setEvery(w.w2().blockScales().data(), 5, 1);
            setEvery(w.w2().blockScales().data(), 11, 130);
            try (WorkerPool pool = new WorkerPool(1)) {
                PanelMatrix packed = PanelPacker.pack(w.w13(), arena, pool);
                assertThat(packed.plainE8m0()).isEqualTo(!withZeroByte);
            }
            for (String kernels : KernelsUnderTest.names()) {
                try (CpuExperts cpu = new CpuExperts(w, KernelsUnderTest.get(kernels), 2)) {
                    for (int tokens : new int[] {1, 4}) {
                        float[] x = SyntheticWeights.inputs(tokens, shape.hidden(), 3 + tokens);
                        Routing r = Fixtures.routing(tokens, 2, EXPERTS, false, 9 + tokens);
                        float[] want = Fixtures.reference(w, x, tokens, r);
                        float[] got = Fixtures.run(cpu, x, tokens, r, shape.hidden());
                        assertThat(relL2(got, want)).as("%s, %d tokens", kernels, tokens)
                                .isLessThanOrEqualTo(1e-5);
                    }
                }
            }
        }
    }

    private static void setEvery(MemorySegment scales, int stride, int value) {
        for (long i = 0; i < scales.byteSize(); i += stride) {
            scales.set(ValueLayout.JAVA_BYTE, i, (byte) value);
        }
    }
}
