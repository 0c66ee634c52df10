package io.moe4j.format;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ActivationQuantTest {

    @Test
    void fp8StaticRoundsToScaledE4m3AndSaturates() {
        float s = 0.5f;
        float[] x = {1f, 224f, 1000f, -1000f, 0.0009f, -0f, 1.0625f * 0.5f};
        Fp8Quant.qdqStatic(x, 0, x.length, s);
        assertThat(x[0]).isEqualTo(1f);
        assertThat(x[1]).isEqualTo(224f);
        assertThat(x[2]).isEqualTo(224f);
        assertThat(x[3]).isEqualTo(-224f);
        assertThat(x[4]).isEqualTo(0.0009765625f); // 0.0018 → nearest subnormal 2^-9
        assertThat(Float.floatToRawIntBits(x[5])).isEqualTo(0x80000000);
        assertThat(x[6]).isEqualTo(0.5f); // 1.0625 is a tie between 1 and 1.125: even mantissa is 1
    }

    @Test
    void fp8PerTokenScalesTheAmaxTo448() {
        float[] x = {-896f, 1f, 3f};
        assertThat(Fp8Quant.qdqPerToken(x, 0, 3)).isEqualTo(2.0);
        assertThat(x).containsExactly(-896f, 1f, 3f);
        float[] zeros = new float[4];
        assertThat(Fp8Quant.qdqPerToken(zeros, 0, 4)).isEqualTo(1.0 / 229376);
        assertThat(zeros).containsOnly(0f);
    }

    @Test
    void fp8GroupsAreIndependent() {
        SplittableRandom r = new SplittableRandom(3);
        float[] x = new float[2 + 256 + 40];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) r.nextGaussian() * (i < 130 ? 1f : 1000f);
        }
        float[] y = x.clone();
        Fp8Quant.qdqGroup(y, 2, x.length - 2, 128);
        for (int g = 2; g < x.length; g += 128) {
            int n = Math.min(128, x.length - g);
            float[] expected = Arrays.copyOfRange(x, g, g + n);
            double amax = 0;
            for (float v : expected) {
                amax = Math.max(amax, Math.abs(v));
            }
            double s = Math.max(amax, 1e-10) / 448;
            for (int i = 0; i < n; i++) {
                int code = ReferenceRounding.encode(ElementFormat.E4M3FN, expected[i] / s);
                expected[i] = (float) (ElementFormat.E4M3FN.decode(code) * s);
            }
            assertThat(Arrays.copyOfRange(y, g, g + n)).as("group at %d", g).isEqualTo(expected);
        }
        assertThat(Arrays.copyOf(y, 2)).isEqualTo(Arrays.copyOf(x, 2));
    }

    @Test
    void arithmeticIsFloat64() {
        // 0.35f / 0.1f is exactly 3.5 in float32 (rint: 4) but 3.4999998882... in double (rint: 3).
        float[] x = {0.35f};
        Int8Quant.qdqStatic(x, 0, 1, 0.1f, 0);
        assertThat(x[0]).isEqualTo((float) (3 * (double) 0.1f));
        assertThat(Int8Quant.quantize(0.35f, 0.1f, 0)).isEqualTo(3);
    }

    @Test
    void int8RoundsHalfToEvenAndClamps() {
        float[] x = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 200f, -200f, 3.49f};
        Int8Quant.qdqStatic(x, 0, x.length, 1f, 0);
        assertThat(x).containsExactly(0f, 2f, 2f, -0f, -2f, 127f, -128f, 3f);
        float[] z = {0f, 10f, -10f, 300f, -300f};
        Int8Quant.qdqStatic(z, 0, z.length, 2f, 3);
        // codes rint(x/2)+3 clamped to [-128, 127], then minus the zero point
        assertThat(z).containsExactly(0f, 10f, -10f, 248f, -262f);
        assertThat(Int8Quant.quantize(-300f, 2f, 3)).isEqualTo(-128);
    }

    @Test
    void int8PerTokenUsesAmaxOver127() {
        float[] x = {-127f, 63.5f, 0.5f, 1.5f};
        assertThat(Int8Quant.qdqPerToken(x, 0, 4)).isEqualTo(1.0);
        assertThat(x).containsExactly(-127f, 64f, 0f, 2f);
        float[] zeros = new float[3];
        assertThat(Int8Quant.qdqPerToken(zeros, 0, 3)).isEqualTo(1e-10 / 127);
        assertThat(zeros).containsOnly(0f);
    }
}
