package io.moe4j.format;

import static org.assertj.core.api.Assertions.assertThat;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class ScalarFormatsTest {

    @Test
    void e8m0DecodesEveryCode() {
        for (int c = 0; c < 255; c++) {
            assertThat(E8m0.decode(c)).as("code %d", c).isEqualTo((float) Math.pow(2, c - 127));
            assertThat(E8m0.decode(c) * E8m0.inverse(c)).as("code %d inverse", c).isEqualTo(1f);
            assertThat(E8m0.exponent(c)).isEqualTo(c - 127);
        }
        assertThat(E8m0.decode(0)).isEqualTo(0x1p-127f);
        assertThat(E8m0.decode(254)).isEqualTo(0x1p127f);
        assertThat(E8m0.decode(255)).isNaN();
        assertThat(E8m0.decode((byte) 0xFF)).isNaN();
        assertThat(E8m0.decode((byte) 0x80)).isEqualTo(2f);
    }

    @Test
    void e8m0EncodeClampsTheExponent() {
        assertThat(E8m0.encodeExponent(0)).isEqualTo(127);
        assertThat(E8m0.encodeExponent(-127)).isZero();
        assertThat(E8m0.encodeExponent(-300)).isZero();
        assertThat(E8m0.encodeExponent(127)).isEqualTo(254);
        assertThat(E8m0.encodeExponent(128)).isEqualTo(254);
        for (int e = -127; e <= 127; e++) {
            assertThat(E8m0.decode(E8m0.encodeExponent(e))).isEqualTo(Math.scalb(1f, e));
        }
    }

    @Test
    void bf16RoundTripsEveryPattern() {
        for (int b = 0; b < 1 << 16; b++) {
            float f = Bf16.toFloat((short) b);
            assertThat(Float.floatToRawIntBits(f)).isEqualTo(b << 16);
            if (Float.isNaN(f)) {
                assertThat(Bf16.toFloat(Bf16.fromFloat(f))).isNaN();
            } else {
                assertThat(Bf16.fromFloat(f) & 0xFFFF).as("pattern 0x%04X", b).isEqualTo(b);
            }
        }
    }

    @Test
    void bf16RoundsHalfToEvenAndKeepsNans() {
        assertThat(Bf16.fromFloat(Float.intBitsToFloat(0x3F808000))).isEqualTo((short) 0x3F80); // tie, even down
        assertThat(Bf16.fromFloat(Float.intBitsToFloat(0x3F818000))).isEqualTo((short) 0x3F82); // tie, even up
        assertThat(Bf16.fromFloat(Float.intBitsToFloat(0x3F808001))).isEqualTo((short) 0x3F81);
        assertThat(Bf16.fromFloat(Float.MAX_VALUE)).isEqualTo((short) 0x7F80); // overflows to inf like IEEE
        // A NaN whose payload is only in the low half must not become infinity.
        assertThat(Bf16.toFloat(Bf16.fromFloat(Float.intBitsToFloat(0x7F800001)))).isNaN();
        assertThat(Bf16.toFloat(Bf16.fromFloat(Float.intBitsToFloat(0xFF800001)))).isNaN();
        assertThat(Bf16.fromFloat(Float.intBitsToFloat(0xFF800001)) & 0x8000).isEqualTo(0x8000);
    }

    @Property(tries = 5000)
    void bf16IsNearestTiesToEven(@ForAll("finiteFloats") float x) {
        assertThat(Bf16.fromFloat(x) & 0xFFFF).as("bf16(%s)", x)
                .isEqualTo(ReferenceRounding.roundToHighBits(x, 16) & 0xFFFF);
    }

    @Test
    void fp16RoundTripsEveryPattern() {
        for (int b = 0; b < 1 << 16; b++) {
            float f = Fp16.toFloat((short) b);
            if (Float.isNaN(f)) {
                assertThat(Fp16.toFloat(Fp16.fromFloat(f))).isNaN();
            } else {
                assertThat(Fp16.fromFloat(f) & 0xFFFF).as("pattern 0x%04X", b).isEqualTo(b);
                assertThat(Fp16.round(f)).isEqualTo(f);
            }
        }
        assertThat(Fp16.fromFloat(65520f)).isEqualTo((short) 0x7C00); // halfway past max rounds to inf
        assertThat(Fp16.fromFloat(65519f)).isEqualTo((short) 0x7BFF);
    }

    @Provide
    Arbitrary<Float> finiteFloats() {
        return Arbitraries.integers().map(Float::intBitsToFloat).filter(Float::isFinite);
    }
}
