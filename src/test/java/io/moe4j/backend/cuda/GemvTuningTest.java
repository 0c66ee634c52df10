package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The tuning rules that need no GPU. */
class GemvTuningTest {

    @Test
    void autoKSplitIsTheSmallestPowerOfTwoThatFillsTheMachine() {
        int sms = 132;
        long wanted = (long) GemvTuning.TARGET_WARPS_PER_SM * sms;
        for (long tiles : new long[] {1, 5, 180, 360, 1000}) {
            for (long pairs : new long[] {1, 4, 8, 32, 512}) {
                int split = GemvTuning.autoKSplit(tiles, pairs, sms);
                assertThat(split).isIn(1, 2, 4, 8);
                if (split < 8) {
                    assertThat(tiles * pairs * split).as("%d tiles, %d pairs", tiles, pairs).isGreaterThanOrEqualTo(wanted);
                }
                if (split > 1) {
                    assertThat(tiles * pairs * (split / 2)).as("%d tiles, %d pairs", tiles, pairs).isLessThan(wanted);
                }
            }
        }
    }

    @Test
    void resolvingFillsEightWarpBlocksUnlessTilesAreGiven() {
        GemvTuning auto = GemvTuning.defaults();
        for (int split : new int[] {1, 2, 4, 8}) {
            GemvTuning r = auto.resolve(split);
            assertThat(r.kSplit() * r.tilesPerBlock()).isEqualTo(8);
        }
        GemvTuning fixed = new GemvTuning(0, 3, 4).resolve(2);
        assertThat(fixed.tilesPerBlock()).isEqualTo(3);
    }

    @Test
    void outOfRangeSettingsAreRejected() {
        assertThatThrownBy(() -> new GemvTuning(4, 2, 1)).hasMessageContaining("depth");
        assertThatThrownBy(() -> new GemvTuning(16, 4, 4)).hasMessageContaining("32 warps");
    }
}
