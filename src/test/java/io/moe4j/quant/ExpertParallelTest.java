package io.moe4j.quant;

import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** LoadOptions.localExperts: every method holds only the asked experts, in the asked order, with the expert map. */
class ExpertParallelTest {

    static List<String> cases() {
        return Cases.all();
    }

    @ParameterizedTest
    @MethodSource("cases")
    void localExpertsMatchTheFullLoad(String name) {
        try (var c = Cases.open(name); Arena arena = Arena.ofConfined()) {
            ExpertWeights all = c.load(arena);
            int last = all.numExperts() - 1;
            ExpertWeights part = c.load(arena, last, 1);
            assertThat(part.numExperts()).isEqualTo(2);
            assertThat(part.globalExperts()).isEqualTo(all.numExperts());
            assertThat(part.localExpert(last)).isEqualTo(0);
            assertThat(part.localExpert(1)).isEqualTo(1);
            assertThat(part.localExpert(0)).isEqualTo(-1);
            assertThat(part.scheme()).isEqualTo(all.scheme());
            assertThat(part.bytesPerExpert()).isEqualTo(all.bytesPerExpert());
            for (int r : new int[]{0, all.w13().rows() - 1}) {
                assertThat(Dequant.row(part.w13(), 0, r)).containsExactly(Dequant.row(all.w13(), last, r));
                assertThat(Dequant.row(part.w13(), 1, r)).containsExactly(Dequant.row(all.w13(), 1, r));
            }
            assertThat(Dequant.row(part.w2(), 1, 3)).containsExactly(Dequant.row(all.w2(), 1, 3));
            if (all.w13Bias() != null) {
                int rows = all.w13().rows();
                assertThat(part.w13Bias()).hasSize(2 * rows);
                assertThat(part.w13Bias()[rows + 2]).isEqualTo(all.w13Bias()[rows + 2]);
            }
            assertThat(part.a13().format()).isEqualTo(all.a13().format());
        }
    }

    @Test
    void outOfRangeOrRepeatedLocalExpertsAreRefused() {
        try (var c = Cases.open("qwen3_ct_fp8_channel"); Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> c.load(arena, 0, 8)).isInstanceOf(MoeException.class)
                    .hasMessageContaining("local expert 8 is out of range");
            assertThatThrownBy(() -> c.load(arena, 3, 3)).isInstanceOf(MoeException.class)
                    .hasMessageContaining("listed twice");
        }
    }

    @Test
    void progressReportsTheBytesLoaded() {
        try (var c = Cases.open("qwen3_quark_w_mxfp4"); Arena arena = Arena.ofConfined()) {
            AtomicLong last = new AtomicLong();
            ExpertWeights w = c.method().load(c.checkpoint(), c.layer(), new LoadOptions(null, last::set), arena);
            assertThat(last.get()).isEqualTo(w.bytesPerExpert() * w.numExperts());
        }
    }
}
