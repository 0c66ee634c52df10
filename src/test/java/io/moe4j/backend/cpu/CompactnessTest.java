package io.moe4j.backend.cpu;

import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertWeights;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The repacked weights stay about as compact as the checkpoint: the same bits a code, plus padding. FP6 takes 5 codes
 * a 32-bit word (6.4 bits a code) and pads each block of 32 codes to 35, 16% more; block FP8's 128×128 scales are
 * kept per row of a panel (one float per 128 codes, 3% more); everything else is within 1%.
 */
class CompactnessTest {

    @ParameterizedTest
    @EnumSource(SyntheticScheme.class)
    void packedBytesPerExpert(SyntheticScheme s) {
        SyntheticWeights.Shape shape = new SyntheticWeights.Shape(2, 512, 256, GateLayout.CONCATENATED,
                Activation.SILU_AND_MUL, false);
        try (Arena arena = Arena.ofShared()) {
            ExpertWeights w = SyntheticWeights.generate(s, shape, 1, arena, b -> {
            });
            try (CpuExperts cpu = new CpuExperts(w, new ScalarKernels(), 1)) {
                double ratio = cpu.packedBytesPerExpert() / (double) w.bytesPerExpert();
                boolean fp6 = s.codes() == CodeType.FP6_E3M2 || s.codes() == CodeType.FP6_E2M3;
                double bound = fp6 ? 1.17 : s.blockRows() > 1 ? 1.04 : 1.01;
                assertThat(ratio).as("%s packed / checkpoint bytes", s).isBetween(0.99, bound);
            }
        }
    }
}
