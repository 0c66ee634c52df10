package io.moe4j.format;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class Nvfp4CodecTest {

    @ParameterizedTest
    @ValueSource(floats = {1f, 27.592955f, 448f * 6f / 3.5f, 0.01f, 3000f})
    void decodeRowMatchesQdq(float globalScale) {
        SplittableRandom r = new SplittableRandom(Float.floatToIntBits(globalScale));
        int rows = 4;
        int cols = 64;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment packedSeg = arena.allocate(1 + rows * cols / 2);
            MemorySegment scalesSeg = arena.allocate(2 + rows * cols / 16);
            float[][] expected = new float[rows][];
            for (int row = 0; row < rows; row++) {
                float[] x = new float[cols];
                for (int i = 0; i < cols; i++) {
                    x[i] = (float) (r.nextGaussian() * Math.pow(2, r.nextInt(-6, 6)));
                }
                if (row == 1) {
                    Arrays.fill(x, 16, 32, 0f); // a zero block scale
                }
                byte[] codes = new byte[cols];
                byte[] scales = new byte[cols / 16];
                assertThat(Nvfp4Codec.quantize(x, 0, cols, globalScale, codes, 0, scales, 0)).isEqualTo(4);
                byte[] packed = new byte[cols / 2];
                MxCodec.packFp4(codes, cols, packed);
                MemorySegment.copy(packed, 0, packedSeg, ValueLayout.JAVA_BYTE, 1 + row * cols / 2, cols / 2);
                MemorySegment.copy(scales, 0, scalesSeg, ValueLayout.JAVA_BYTE, 2 + row * cols / 16, cols / 16);
                expected[row] = x.clone();
                Nvfp4Codec.qdqInPlace(expected[row], 0, cols, globalScale);
            }
            for (int row = 0; row < rows; row++) {
                float[] out = new float[cols];
                Nvfp4Codec.decodeRow(packedSeg, 1 + row * cols / 2, scalesSeg, 2 + row * cols / 16, cols,
                        globalScale, out, 0);
                assertThat(out).as("row %d", row).isEqualTo(expected[row]);
            }
        }
    }

    @Test
    void valuesAreRoundedOnce() {
        // (e2m1 · s8) is exact, so the dequantized value is the correctly rounded quotient by g.
        float g = 27.592955f;
        for (int s = 0; s < 0x7F; s++) {
            for (int c = 0; c < 16; c++) {
                float e2m1 = ElementFormat.E2M1.decode(c);
                float s8 = ElementFormat.E4M3FN.decode(s);
                assertThat(e2m1 * s8 / g).isEqualTo((float) ((double) e2m1 * s8 / g));
            }
        }
    }

    @Test
    void blockScaleSaturatesAndZeroBlocksStayZero() {
        assertThat(Nvfp4Codec.blockScaleCode(1e9f, 1f)).isEqualTo(0x7E);
        assertThat(Nvfp4Codec.blockScaleCode(0f, 100f)).isZero();
        float[] x = new float[20];
        x[17] = 1e-30f; // its scale underflows to zero in E4M3
        Nvfp4Codec.qdqInPlace(x, 0, x.length, 1f);
        assertThat(x).containsOnly(0f);
    }

    @Test
    void elementsSaturateAtSix() {
        // g · amax / 6 saturates the E4M3 scale at 448, so elements beyond 6 · 448 / g clamp to ±6.
        float[] x = {1e6f, -1e6f, 1f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f};
        Nvfp4Codec.qdqInPlace(x, 0, x.length, 1f);
        assertThat(x[0]).isEqualTo(6f * 448f);
        assertThat(x[1]).isEqualTo(-6f * 448f);
    }
}
