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
    void tileSpecsPickTheKernel() {
        CudaTuning mma = CudaTuning.defaults().withTile("w8t1n32");
        assertThat(mma.wgmma()).isNull();
        assertThat(mma.tileName()).isEqualTo("w8t1n32");
        CudaTuning wg = mma.withTile("g1n256m2s5");
        assertThat(wg.wgmma()).isEqualTo(new CudaTuning.WgmmaTile(1, 256, 2, 5, 16));
        assertThat(wg.tileName()).isEqualTo("g1n256m2s5");
        assertThat(wg.tileWarps()).as("the mma.sync shape stays for stacks the wgmma kernel cannot take").isEqualTo(8);
        assertThat(CudaTuning.defaults().withTile("g2n128").wgmma().defines(64))
                .containsExactly("-DWG_GROUPS=2", "-DWG_N=64", "-DWG_M=1", "-DWG_STAGES=4");
        // per stage 128 pairs x 128 bytes + 8 warps x 32 lanes x 20 bytes = 21504 (21 KiB); 4 stages + 1 KiB
        assertThat(CudaTuning.defaults().withTile("g2n128").wgmma().sharedBytes(128)).isEqualTo(4 * 21504 + 1024);
        assertThat(CudaTuning.defaults().withTile("g1n64m2").wgmma().sharedBytes(64)).isEqualTo(4 * 13312 + 1024);
    }

    @Test
    void wgmmaBlocksNarrowToTheExpertsAverageDownToTheFewestPairs() {
        CudaTuning.WgmmaTile standard = CudaTuning.defaults().withTile("g2n128").wgmma();
        assertThat(standard.fewestTokens()).isEqualTo(16);
        assertThat(standard.blockPairs(8192, 32)).as("256 an expert").isEqualTo(128);
        assertThat(standard.blockPairs(1920, 32)).as("60 an expert: the average above 64").isEqualTo(64);
        assertThat(standard.blockPairs(512, 32)).as("16 an expert: twice it below 64").isEqualTo(32);
        assertThat(standard.blockPairs(640, 32)).as("20 an expert").isEqualTo(32);
        assertThat(standard.blockPairs(256, 32)).as("8 an expert").isEqualTo(16);
        assertThat(standard.blockPairs(64, 32)).as("the floor").isEqualTo(16);
        CudaTuning.WgmmaTile wide = CudaTuning.defaults().withTile("g2n128f64").wgmma();
        assertThat(wide.name()).isEqualTo("g2n128f64");
        assertThat(wide.blockPairs(256, 32)).as("8 an expert, floor 64").isEqualTo(64);
        assertThat(CudaTuning.defaults().withTile("g2n32").wgmma())
                .isEqualTo(new CudaTuning.WgmmaTile(2, 32, 1, 4, 16));
        // per stage 16 pairs x 128 bytes + 8 warps x 32 lanes x 20 bytes = 7168; 4 stages + 1 KiB
        assertThat(standard.sharedBytes(16)).isEqualTo(4 * 7168 + 1024);
    }

    @Test
    void malformedOrOutOfRangeShapesNameTheProblem() {
        assertThatThrownBy(() -> CudaTuning.defaults().withTile("g2n96"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("out of range");
        assertThatThrownBy(() -> CudaTuning.defaults().withTile("g2n64f128"))
                .as("a floor above the width").isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("out of range");
        assertThatThrownBy(() -> CudaTuning.defaults().withTile("g2n128f8"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("out of range");
        assertThatThrownBy(() -> CudaTuning.defaults().withTile("x2"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("x2");
        assertThatThrownBy(() -> CudaTuning.defaults().withUnits("4-16"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("4-16");
        assertThatThrownBy(() -> CudaTuning.defaults().withUnits("9x8"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("out of range");
    }

    @Test
    void twoWaySwitchesReadTheirPropertiesAndNameABadValue() {
        String[] keys = {"moe4j.cuda.transfers", "moe4j.cuda.overlap", "moe4j.cuda.unitsGemv"};
        String[] saved = new String[keys.length];
        for (int i = 0; i < keys.length; i++) {
            saved[i] = System.clearProperty(keys[i]);
        }
        try {
            assertThat(CudaTuning.fromSystemProperties().overlappedLaunches()).isTrue();
            assertThat(CudaTuning.fromSystemProperties().mappedTransfers()).isTrue();
            assertThat(CudaTuning.fromSystemProperties().unitsGemv()).isTrue();
            System.setProperty("moe4j.cuda.overlap", "false");
            System.setProperty("moe4j.cuda.transfers", " copy ");
            System.setProperty("moe4j.cuda.unitsGemv", "false");
            CudaTuning t = CudaTuning.fromSystemProperties();
            assertThat(t.overlappedLaunches()).isFalse();
            assertThat(t.mappedTransfers()).isFalse();
            assertThat(t.unitsGemv()).isFalse();
            assertThat(t.withTile("g2n64").withUnits(2, 8).unitsGemv()).as("kept by the other withers").isFalse();
            System.setProperty("moe4j.cuda.overlap", "yes");
            assertThatThrownBy(CudaTuning::fromSystemProperties).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("-Dmoe4j.cuda.overlap=yes").hasMessageContaining("true or false");
        } finally {
            for (int i = 0; i < keys.length; i++) {
                if (saved[i] == null) {
                    System.clearProperty(keys[i]);
                } else {
                    System.setProperty(keys[i], saved[i]);
                }
            }
        }
    }

    @Test
    void theOneTokenGemvTakesAsManyRowsAWarpAsLetOneChunkHoldEachRow() {
        // 128 bytes of rows a lane: FP8 units are 32 bytes, so 4 rows of up to 32 units (768 columns), 2 of up to 64
        // (2048), else one row in chunks of 4 units
        assertThat(units(32, 24).gemvRowsPerWarp()).isEqualTo(4);
        assertThat(units(32, 64).gemvRowsPerWarp()).isEqualTo(2);
        assertThat(units(32, 65).gemvRowsPerWarp()).isEqualTo(1);
        assertThat(units(32, 224).gemvRowsPerWarp()).isEqualTo(1);
        assertThat(units(16, 64).gemvRowsPerWarp()).isEqualTo(4); // 4-bit codes
        assertThat(units(16, 90).gemvRowsPerWarp()).isEqualTo(2);
        assertThat(units(64, 10).gemvRowsPerWarp()).isEqualTo(2); // bf16: two 64-byte units at most
        assertThat(units(128, 10).gemvRowsPerWarp()).isEqualTo(1); // float32
        CudaTuning t = CudaTuning.defaults();
        assertThat(units(32, 24).rowsPerBlock(t, true)).isEqualTo(4 * t.unitsWarps());
        assertThat(units(32, 24).rowsPerBlock(t, false)).isEqualTo(t.unitsRows() * t.unitsWarps());
    }

    /** A stack's shape alone (no device memory): enough for the launch rules. */
    private static UnitMatrix units(int unitBytes, int units) {
        return new UnitMatrix(1, 64, 32 * units, units, unitBytes, java.util.List.of(), null, null, null, null, null,
                1, 1, 1, 1, 1, 1, "shape only");
    }
}
