package io.moe4j.backend.cpu;

import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Expert parallelism, weights on the input, concurrent calls and refused weights, against the reference. */
class CpuExpertsRoutingTest {
    static final SyntheticScheme SCHEME = SyntheticScheme.MXFP4;

    static java.util.List<String> kernels() {
        return KernelsUnderTest.names();
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void expertsHeldElsewhereContributeNothing(String kernels) {
        try (Arena arena = Arena.ofShared()) {
            SyntheticWeights.Shape shape = Fixtures.shape(SCHEME, GateLayout.INTERLEAVED, 4);
            // 4 local experts standing for global experts 6, 1, 3, 8 of 10.
            int[] map = new int[10];
            Arrays.fill(map, -1);
            map[6] = 0;
            map[1] = 1;
            map[3] = 2;
            map[8] = 3;
            ExpertWeights w = Fixtures.weights(SCHEME, shape, 5, arena).withExpertMap(map);
            Routing r = Fixtures.routing(17, 3, 10, false, 9);
            float[] x = SyntheticWeights.inputs(17, shape.hidden(), 4);
            float[] want = Fixtures.reference(w, x, 17, r);
            assertThat(want).as("some tokens route only to experts held elsewhere").contains(0f);
            try (CpuExperts cpu = new CpuExperts(w, KernelsUnderTest.get(kernels), 2)) {
                assertThat(relL2(Fixtures.run(cpu, x, 17, r, shape.hidden()), want)).isLessThan(1e-5);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void routerWeightOnTheInput(String kernels) {
        try (Arena arena = Arena.ofShared()) {
            SyntheticScheme scheme = SyntheticScheme.FP8_CHANNEL; // dynamic activation quantization sees the weight
            SyntheticWeights.Shape shape = Fixtures.shape(scheme, GateLayout.CONCATENATED, 5);
            ExpertWeights w = Fixtures.weights(scheme, shape, 6, arena);
            Routing r = Fixtures.routing(9, 1, 5, true, 2);
            float[] x = SyntheticWeights.inputs(9, shape.hidden(), 8);
            float[] want = Fixtures.reference(w, x, 9, r);
            Routing onOutput = new Routing(9, 1, r.ids(), r.weights(), false);
            assertThat(relL2(Fixtures.reference(w, x, 9, onOutput), want)).as("the placement matters")
                    .isGreaterThan(1e-3);
            try (CpuExperts cpu = new CpuExperts(w, KernelsUnderTest.get(kernels), 2)) {
                assertThat(relL2(Fixtures.run(cpu, x, 9, r, shape.hidden()), want)).isLessThan(1e-5);
            }
        }
    }

    /**
     * Experts given the same tokens share one prepared input (one token's top-k at decode, or a batch whose tokens all
     * chose the same experts); each expert's share of the result must be the bits it gives when it alone is chosen.
     * Act-order weights have a column plan per expert, so theirs are prepared apart.
     */
    @ParameterizedTest
    @MethodSource("kernels")
    void expertsSharingTheirTokensGiveTheBitsEachGivesAlone(String kernels) {
        for (SyntheticScheme scheme : java.util.List.of(SyntheticScheme.MXFP4, SyntheticScheme.W4A16,
                SyntheticScheme.W8A16, SyntheticScheme.W4A16_ACT_ORDER)) {
            try (Arena arena = Arena.ofShared()) {
                SyntheticWeights.Shape shape = Fixtures.shape(scheme, GateLayout.CONCATENATED, 5);
                ExpertWeights w = Fixtures.weights(scheme, shape, 4, arena);
                int[] chosen = {0, 2, 3};
                float[] weights = {0.7f, 0.2f, 1.3f};
                for (int tokens : new int[] {1, 3}) {
                    float[] x = SyntheticWeights.inputs(tokens, shape.hidden(), 12 + tokens);
                    int[] ids = new int[tokens * chosen.length];
                    float[] wts = new float[ids.length];
                    for (int t = 0; t < tokens; t++) {
                        System.arraycopy(chosen, 0, ids, t * chosen.length, chosen.length);
                        System.arraycopy(weights, 0, wts, t * chosen.length, chosen.length);
                    }
                    try (CpuExperts cpu = new CpuExperts(w, KernelsUnderTest.get(kernels), 2)) {
                        float[] together = Fixtures.run(cpu, x, tokens,
                                new Routing(tokens, chosen.length, ids, wts, false), shape.hidden());
                        float[] summed = new float[together.length];
                        for (int k = 0; k < chosen.length; k++) {
                            int[] one = new int[tokens];
                            float[] oneWeight = new float[tokens];
                            Arrays.fill(one, chosen[k]);
                            Arrays.fill(oneWeight, weights[k]);
                            float[] alone = Fixtures.run(cpu, x, tokens, new Routing(tokens, 1, one, oneWeight, false),
                                    shape.hidden());
                            for (int i = 0; i < summed.length; i++) {
                                summed[i] += alone[i];
                            }
                        }
                        assertThat(together).as("%s %s, %d tokens", kernels, scheme, tokens).containsExactly(summed);
                        assertThat(relL2(together, Fixtures.reference(w, x, tokens,
                                new Routing(tokens, chosen.length, ids, wts, false)))).isLessThan(1e-5);
                    }
                }
            }
        }
    }

    @Test
    void concurrentCallsGetTheirOwnResults() throws Exception {
        try (Arena arena = Arena.ofShared(); ExecutorService callers = Executors.newFixedThreadPool(3)) {
            SyntheticWeights.Shape shape = Fixtures.shape(SyntheticScheme.W4A16, GateLayout.CONCATENATED, 6);
            ExpertWeights w = Fixtures.weights(SyntheticScheme.W4A16, shape, 3, arena);
            try (Experts cpu = new CpuBackend().prepare(w, new ExecutionOptions(2))) {
                float[][] x = new float[6][];
                Routing[] r = new Routing[6];
                float[][] alone = new float[6][];
                for (int i = 0; i < 6; i++) {
                    x[i] = SyntheticWeights.inputs(1 + i, shape.hidden(), i);
                    r[i] = Fixtures.routing(1 + i, 2, 6, false, i);
                    alone[i] = Fixtures.run(cpu, x[i], 1 + i, r[i], shape.hidden());
                }
                for (int round = 0; round < 20; round++) {
                    Future<?>[] f = new Future<?>[6];
                    for (int i = 0; i < 6; i++) {
                        int k = i;
                        f[i] = callers.submit(() -> assertThat(Fixtures.run(cpu, x[k], 1 + k, r[k], shape.hidden()))
                                .containsExactly(alone[k]));
                    }
                    for (Future<?> fu : f) {
                        fu.get();
                    }
                }
            }
        }
    }

    @Test
    void fp8WeightsHoldingNanAreRefusedWithTheirPlace() {
        try (Arena arena = Arena.ofShared()) {
            SyntheticWeights.Shape shape = Fixtures.shape(SyntheticScheme.FP8_CHANNEL, GateLayout.CONCATENATED, 2);
            ExpertWeights w = Fixtures.weights(SyntheticScheme.FP8_CHANNEL, shape, 3, arena);
            ExpertMatrix m = w.w2();
            MemorySegment codes = m.data();
            codes.set(ValueLayout.JAVA_BYTE, m.rowOffset(1, 5) + 7, (byte) 0xFF);
            assertThatThrownBy(() -> new CpuExperts(w, new ScalarKernels(), 1).close())
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("FP8_E4M3 weight code 0xFF at expert 1, row 5, column 7 is NaN or infinite; the cpu "
                            + "backend does not run weights holding such codes");
        }
    }
}
