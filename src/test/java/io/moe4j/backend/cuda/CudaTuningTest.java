package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class CudaTuningTest {

    @Test
    void unitsShapeParsesRowsByWarps() {
        CudaTuning t = CudaTuning.defaults().withUnits("4x16");
        assertThat(t.unitsRows()).isEqualTo(4);
        assertThat(t.unitsWarps()).isEqualTo(16);
        assertThat(t.withTile("w8t1n32").unitsRows()).isEqualTo(4);
    }

    @Test
    void malformedOrOutOfRangeShapesNameTheProblem() {
        assertThatThrownBy(() -> CudaTuning.defaults().withUnits("4-16"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4-16");
        assertThatThrownBy(() -> CudaTuning.defaults().withUnits("9x8"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("out of range");
    }
}
