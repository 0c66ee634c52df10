package io.moe4j.format;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class ElementFormatTest {

    @Test
    void shapesMatchTheSpecifications() {
        assertShape(ElementFormat.E2M1, 4, 1, 2, 6f);
        assertShape(ElementFormat.E3M2, 6, 2, 4, 28f);
        assertShape(ElementFormat.E2M3, 6, 3, 2, 7.5f);
        assertShape(ElementFormat.E4M3FN, 8, 3, 8, 448f);
        assertShape(ElementFormat.E5M2, 8, 2, 15, 57344f);
    }

    private static void assertShape(ElementFormat f, int bits, int mbits, int emax, float max) {
        assertThat(f.bits()).as("%s bits", f).isEqualTo(bits);
        assertThat(f.mantissaBits()).as("%s mantissaBits", f).isEqualTo(mbits);
        assertThat(f.emax()).as("%s emax", f).isEqualTo(emax);
        assertThat(f.maxNormal()).as("%s maxNormal", f).isEqualTo(max);
        // emax is the exponent of the largest normal value.
        assertThat(Math.getExponent(f.maxNormal())).as("%s exponent of max", f).isEqualTo(emax);
    }

    @Test
    void fp4TableIsTheOcpOne() {
        assertThat(ElementFormat.E2M1.decodeTable()).containsExactly(
                0f, 0.5f, 1f, 1.5f, 2f, 3f, 4f, 6f, -0f, -0.5f, -1f, -1.5f, -2f, -3f, -4f, -6f);
    }

    @Test
    void fp8SpecialCodes() {
        ElementFormat e4 = ElementFormat.E4M3FN;
        assertThat(e4.decode(0x7E)).isEqualTo(448f);
        assertThat(e4.decode(0x7F)).isNaN();
        assertThat(e4.decode(0xFF)).isNaN();
        assertThat(e4.decode(0x78)).isEqualTo(256f); // E4M3FN uses the top exponent for normals
        assertThat(e4.decode(0x01)).isEqualTo(0x1p-9f);
        assertThat(e4.decode(0x08)).isEqualTo(0x1p-6f);
        ElementFormat e5 = ElementFormat.E5M2;
        assertThat(e5.decode(0x7B)).isEqualTo(57344f);
        assertThat(e5.decode(0x7C)).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(e5.decode(0xFC)).isEqualTo(Float.NEGATIVE_INFINITY);
        assertThat(e5.decode(0x7D)).isNaN();
        assertThat(e5.decode(0x7E)).isNaN();
        assertThat(e5.decode(0xFF)).isNaN();
        assertThat(e5.decode(0x01)).isEqualTo(0x1p-16f);
    }

    @ParameterizedTest
    @EnumSource(ElementFormat.class)
    void everyCodeDecodesToItsFieldValue(ElementFormat f) {
        for (int c = 0; c < f.codeCount(); c++) {
            double expected = ReferenceRounding.value(f, c);
            float actual = f.decode(c);
            if (Double.isNaN(expected)) {
                assertThat(actual).as("%s code 0x%02X", f, c).isNaN();
            } else {
                assertThat(Float.floatToRawIntBits(actual)).as("%s code 0x%02X: %s vs %s", f, c, actual, expected)
                        .isEqualTo(Float.floatToRawIntBits((float) expected));
                assertThat((double) actual).as("%s code 0x%02X is exact in float", f, c).isEqualTo(expected);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(ElementFormat.class)
    void decodeReadsOnlyTheLowBits(ElementFormat f) {
        for (int c = 0; c < f.codeCount(); c++) {
            assertThat(Float.floatToRawIntBits(f.decode(c | ~(f.codeCount() - 1))))
                    .isEqualTo(Float.floatToRawIntBits(f.decode(c)));
        }
        assertThat(f.decode((byte) 0x81)).isEqualTo(f.decode(0x81 & (f.codeCount() - 1)));
    }

    @ParameterizedTest
    @EnumSource(ElementFormat.class)
    void encodeInvertsDecodeOnEveryNonNanCode(ElementFormat f) {
        for (int c = 0; c < f.codeCount(); c++) {
            float v = f.decode(c);
            if (Float.isNaN(v)) {
                continue;
            }
            int expected = Float.isInfinite(v) ? (c & (f.codeCount() >> 1)) | f.encode(f.maxNormal()) : c;
            assertThat(f.encode(v)).as("%s encode(decode(0x%02X) = %s)", f, c, v).isEqualTo(expected);
        }
    }

    @ParameterizedTest
    @EnumSource(ElementFormat.class)
    void decodeTableIsACopy(ElementFormat f) {
        float[] t = f.decodeTable();
        assertThat(t).hasSize(f.codeCount());
        t[1] = 12345f;
        assertThat(f.decode(1)).isNotEqualTo(12345f);
    }

    @ParameterizedTest
    @EnumSource(ElementFormat.class)
    void midpointsRoundToTheEvenNeighbour(ElementFormat f) {
        List<Float> values = finiteSortedPositives(f);
        for (int i = 0; i + 1 < values.size(); i++) {
            float lo = values.get(i);
            float hi = values.get(i + 1);
            float mid = (float) (((double) lo + hi) / 2); // exact: the formats are far narrower than float32
            int loCode = f.encode(lo);
            int hiCode = f.encode(hi);
            int even = (loCode & 1) == 0 ? loCode : hiCode;
            assertThat(f.encode(mid)).as("%s midpoint %s of %s and %s", f, mid, lo, hi).isEqualTo(even);
            assertThat(f.encode(-mid)).as("%s midpoint -%s", f, mid).isEqualTo(even | (f.codeCount() >> 1));
            assertThat(f.encode(Math.nextDown(mid))).as("%s just below %s", f, mid).isEqualTo(loCode);
            assertThat(f.encode(Math.nextUp(mid))).as("%s just above %s", f, mid).isEqualTo(hiCode);
        }
    }

    @ParameterizedTest
    @EnumSource(ElementFormat.class)
    void saturatesAndHandlesSpecials(ElementFormat f) {
        int signBit = f.codeCount() >> 1;
        int max = f.encode(f.maxNormal());
        assertThat(f.encode(Float.POSITIVE_INFINITY)).isEqualTo(max);
        assertThat(f.encode(Float.NEGATIVE_INFINITY)).isEqualTo(max | signBit);
        assertThat(f.encode(Float.MAX_VALUE)).isEqualTo(max);
        assertThat(f.encode(f.maxNormal() * 1.5f)).isEqualTo(max);
        assertThat(f.encode(0f)).isZero();
        assertThat(f.encode(-0f)).isEqualTo(signBit);
        assertThat(f.encode(Float.MIN_VALUE)).isZero();
        assertThat(f.encode(-Float.MIN_VALUE)).isEqualTo(signBit);
        if (f.hasNaN()) {
            assertThat(f.decode(f.encode(Float.NaN))).isNaN();
            assertThat(f.encode(Float.NaN)).isEqualTo(f.nanCode());
            assertThat(f.encode(Float.intBitsToFloat(0xFFC00000))).isEqualTo(f.nanCode() | signBit);
        } else {
            assertThat(f.encode(Float.NaN)).isZero();
        }
    }

    @Property(tries = 3000)
    void encodeIsTheNearestCodeTiesToEven(@ForAll ElementFormat f, @ForAll("anyFloat") float x) {
        assertThat(f.encode(x)).as("%s encode(%s)", f, x).isEqualTo(ReferenceRounding.encode(f, x));
    }

    @Property(tries = 3000)
    void encodeIsTheNearestCodeInRange(@ForAll ElementFormat f, @ForAll("inRange") float x) {
        assertThat(f.encode(x)).as("%s encode(%s)", f, x).isEqualTo(ReferenceRounding.encode(f, x));
    }

    @Property(tries = 3000)
    void encodeOfADoubleRoundsOnce(@ForAll ElementFormat f, @ForAll("doublesInRange") double x) {
        assertThat(f.encode(x)).as("%s encode(%s)", f, x).isEqualTo(ReferenceRounding.encode(f, x));
    }

    @ParameterizedTest
    @EnumSource(ElementFormat.class)
    void encodeOfADoubleNearAMidpointIsNotDoubleRounded(ElementFormat f) {
        List<Float> values = finiteSortedPositives(f);
        for (int i = 0; i + 1 < values.size(); i++) {
            double mid = ((double) values.get(i) + values.get(i + 1)) / 2;
            int loCode = f.encode(values.get(i));
            int hiCode = f.encode(values.get(i + 1));
            // Within float32's rounding of the midpoint but off it: narrowing first would make these ties.
            assertThat(f.encode(Math.nextDown(mid))).as("%s just below %s", f, mid).isEqualTo(loCode);
            assertThat(f.encode(Math.nextUp(mid))).as("%s just above %s", f, mid).isEqualTo(hiCode);
            assertThat(f.encode(mid)).isEqualTo(f.encode((float) mid));
            assertThat(f.encode(-mid)).isEqualTo(f.encode((float) -mid));
        }
        assertThat(f.encode(Double.NaN)).isEqualTo(f.encode(Float.NaN));
        assertThat(f.encode(Double.NEGATIVE_INFINITY)).isEqualTo(f.encode(Float.NEGATIVE_INFINITY));
        assertThat(f.encode(-0.0)).isEqualTo(f.encode(-0f));
        assertThat(f.encode(Double.MIN_VALUE)).isZero();
        assertThat(f.encode(1e300)).isEqualTo(f.encode(f.maxNormal()));
    }

    @Property(tries = 1000)
    void encodeOfAFloatAndOfItsDoubleAgree(@ForAll ElementFormat f, @ForAll("anyFloat") float x) {
        assertThat(f.encode((double) x)).isEqualTo(f.encode(x));
    }

    @Property(tries = 1000)
    void roundIsMonotonic(@ForAll ElementFormat f, @ForAll("inRange") float a, @ForAll("inRange") float b) {
        float lo = Math.min(a, b);
        float hi = Math.max(a, b);
        assertThat(f.round(lo)).isLessThanOrEqualTo(f.round(hi));
    }

    @Provide
    Arbitrary<Float> anyFloat() {
        return Arbitraries.oneOf(
                Arbitraries.integers().map(Float::intBitsToFloat),
                Arbitraries.floats().withSpecialValue(Float.NaN).withSpecialValue(Float.POSITIVE_INFINITY));
    }

    @Provide
    Arbitrary<Float> inRange() {
        // Around every format's range: magnitudes 2^-20 .. 2^17 with random mantissas.
        return Arbitraries.integers().between(-20, 17).flatMap(e -> Arbitraries.floats().between(-1f, 1f)
                .map(m -> Math.scalb(m, e + 1)));
    }

    @Provide
    Arbitrary<Double> doublesInRange() {
        return Arbitraries.integers().between(-20, 17).flatMap(e -> Arbitraries.doubles().between(-1, 1)
                .map(m -> Math.scalb(m, e + 1)));
    }

    private static List<Float> finiteSortedPositives(ElementFormat f) {
        List<Float> values = new ArrayList<>();
        for (int c = 0; c < f.codeCount() >> 1; c++) {
            float v = f.decode(c);
            if (Float.isFinite(v)) {
                values.add(v);
            }
        }
        values.sort(Float::compare);
        return values;
    }
}
