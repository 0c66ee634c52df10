package io.moe4j.bench;

import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.emulation.EmulationBackend;
import io.moe4j.format.ElementFormat;
import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.routing.Routing;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;

class SyntheticWeightsTest {
    static final SyntheticWeights.Shape SHAPE = new SyntheticWeights.Shape(3, 256, 128, GateLayout.CONCATENATED,
            Activation.SILU_AND_MUL, true);

    @ParameterizedTest
    @EnumSource(SyntheticScheme.class)
    void finiteWeightsOfUnitGainInTheSchemesLayout(SyntheticScheme s) {
        try (Arena arena = Arena.ofConfined()) {
            ExpertWeights w = SyntheticWeights.generate(s, SHAPE, 1, arena, b -> {
            });
            assertThat(w.w13().codes()).isEqualTo(s.codes());
            assertThat(w.a13().format()).isEqualTo(s.activations(3).format());
            assertThat(w.w13().zeroPoints() != null).isEqualTo(s.zeroPoints());
            assertThat(w.w13().groupIndex() != null).isEqualTo(s.actOrder());
            assertThat(w.w13().shardScales() != null).isEqualTo(s.shards());
            for (ExpertMatrix m : new ExpertMatrix[] {w.w13(), w.w2()}) {
                float[] row = new float[m.cols()];
                double sumSquares = 0;
                for (int e = 0; e < m.experts(); e++) {
                    for (int r = 0; r < m.rows(); r++) {
                        MatrixDequantizer.row(m, e, r, row);
                        for (float v : row) {
                            assertThat(v).as("%s expert %d row %d", s, e, r).isFinite();
                            sumSquares += (double) v * v;
                        }
                    }
                }
                // A row's gain, sqrt(Σ w²), averaged over rows: about 1 (block scales jitter by ±25%, E8M0 by 2×).
                double gain = Math.sqrt(sumSquares / ((double) m.experts() * m.rows()));
                assertThat(gain).as("%s row gain", s).isBetween(0.3, 3.0);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(SyntheticScheme.class)
    void sameSeedSameWeights(SyntheticScheme s) {
        try (Arena arena = Arena.ofConfined()) {
            ExpertWeights a = SyntheticWeights.generate(s, SHAPE, 42, arena, b -> {
            });
            ExpertWeights b = SyntheticWeights.generate(s, SHAPE, 42, arena, n -> {
            });
            ExpertWeights c = SyntheticWeights.generate(s, SHAPE, 43, arena, n -> {
            });
            assertThat(a.w2().data().mismatch(b.w2().data())).isEqualTo(-1L);
            assertThat(a.w2().data().mismatch(c.w2().data())).isNotEqualTo(-1L);
        }
    }

    @ParameterizedTest
    @EnumSource(value = SyntheticScheme.class, names = {"FP8_CHANNEL", "FP8_E5M2"})
    void noNanOrInfinityCodes(SyntheticScheme s) {
        try (Arena arena = Arena.ofConfined()) {
            ExpertWeights w = SyntheticWeights.generate(s, SHAPE, 9, arena, b -> {
            });
            ElementFormat f = s.codes() == CodeType.FP8_E4M3 ? ElementFormat.E4M3FN : ElementFormat.E5M2;
            MemorySegment d = w.w13().data();
            for (long i = 0; i < d.byteSize(); i++) {
                assertThat(f.decode(d.get(java.lang.foreign.ValueLayout.JAVA_BYTE, i))).isFinite();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = SyntheticScheme.class, names = {"MXFP4", "NVFP4", "FP8_BLOCK", "W4A16"})
    void layerOutputsAreOfOrderOne(SyntheticScheme s) {
        try (Arena arena = Arena.ofConfined()) {
            ExpertWeights w = SyntheticWeights.generate(s, SHAPE, 2, arena, b -> {
            });
            float[] x = SyntheticWeights.inputs(4, SHAPE.hidden(), 1);
            Routing r = new Routing(4, 1, new int[] {0, 1, 2, 0}, new float[] {1, 1, 1, 1}, false);
            float[] out = new float[x.length];
            try (Experts ref = new EmulationBackend().prepare(w, new ExecutionOptions(1))) {
                ref.forward(x, 4, r, out);
            }
            double rms = Math.sqrt(java.util.stream.IntStream.range(0, out.length).mapToDouble(i -> out[i] * out[i])
                    .average().orElseThrow());
            assertThat(rms).as("%s output rms", s).isBetween(0.05, 5.0);
        }
    }
}
