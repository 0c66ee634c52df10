package io.moe4j.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class MxCodecTest {

    @Test
    void evenRuleRoundsTheAmaxUpOnlyWhenTheMantissaWouldCarry() {
        ElementFormat fp4 = ElementFormat.E2M1;
        // 6 = 1.5 · 2^2 keeps exponent 2: e = 2 - emax(2) = 0.
        assertThat(MxCodec.scaleCodeForAmax(6f, fp4)).isEqualTo(127);
        // Mantissa 1.75 is at the threshold 2 - 2^-(1+1): rounds up to 2^3, e = 1.
        assertThat(MxCodec.scaleCodeForAmax(7f, fp4)).isEqualTo(128);
        assertThat(MxCodec.scaleCodeForAmax(Math.nextDown(7f), fp4)).isEqualTo(127);
        // E2M3 (3 mantissa bits): threshold 2 - 2^-4 = 1.9375.
        assertThat(MxCodec.scaleCodeForAmax(1.9375f, ElementFormat.E2M3)).isEqualTo(127 + 1 - 2);
        assertThat(MxCodec.scaleCodeForAmax(Math.nextDown(1.9375f), ElementFormat.E2M3)).isEqualTo(127 - 2);
        // Zero, subnormal and NaN/inf extremes.
        assertThat(MxCodec.scaleCodeForAmax(0f, fp4)).isZero();
        assertThat(MxCodec.scaleCodeForAmax(Float.MIN_VALUE, fp4)).isZero();
        assertThat(MxCodec.scaleCodeForAmax(Float.NaN, fp4)).isEqualTo(255);
        assertThat(MxCodec.scaleCodeForAmax(Float.POSITIVE_INFINITY, fp4)).isEqualTo(254);
        assertThat(MxCodec.scaleCodeForAmax(Float.MAX_VALUE, fp4)).isEqualTo(254);
        assertThat(MxCodec.scaleCodeForAmax(0x1p127f, fp4)).isEqualTo(127 + 125);
    }

    @Property(tries = 2000)
    void evenRuleMatchesItsDefinitionInDouble(@ForAll ElementFormat f, @ForAll("positiveNormals") float amax) {
        int exp = Math.getExponent((double) amax);
        double mantissa = amax / Math.pow(2, exp);
        if (mantissa >= 2 - Math.pow(2, -(f.mantissaBits() + 1))) {
            exp++;
        }
        // Rounding past the largest float exponent gives infinity in the float32 reference, whose log2 clamps to 127.
        int expected = exp == 128 ? 254 : Math.clamp(exp - f.emax(), -127, 127) + 127;
        assertThat(MxCodec.scaleCodeForAmax(amax, f)).as("%s amax %s", f, amax).isEqualTo(expected);
    }

    @Property(tries = 300)
    void qdqIsTheDecodeOfTheQuantizedBlock(@ForAll ElementFormat f, @ForAll("blocks") float[] x) {
        byte[] codes = new byte[x.length];
        int scaleCode = MxCodec.quantizeBlock(x, 0, x.length, f, codes, 0);
        assertThat(scaleCode).isEqualTo(MxCodec.sharedScaleCode(x, 0, x.length, f));
        float[] y = x.clone();
        MxCodec.qdqInPlace(y, 0, y.length, f);
        for (int i = 0; i < x.length; i++) {
            float expected = f.decode(codes[i]) * E8m0.decode(scaleCode);
            assertThat(Float.floatToIntBits(y[i])).as("%s element %d", f, i).isEqualTo(Float.floatToIntBits(expected));
            // The scale is chosen so that nothing but the block's rounding-up maximum can saturate.
            assertThat(Math.abs(x[i]) / E8m0.decode(scaleCode)).isLessThanOrEqualTo(f.maxNormal() * 2);
        }
    }

    @Property(tries = 300)
    void qdqElementsAreNearestRepresentable(@ForAll ElementFormat f, @ForAll("blocks") float[] x) {
        float[] y = x.clone();
        MxCodec.qdqInPlace(y, 0, y.length, f);
        float scale = E8m0.decode(MxCodec.sharedScaleCode(x, 0, x.length, f));
        for (int i = 0; i < x.length; i++) {
            float expected = f.decode(ReferenceRounding.encode(f, x[i] / scale)) * scale;
            assertThat(y[i]).as("%s element %d of %s", f, i, Arrays.toString(x)).isEqualTo(expected);
        }
    }

    @Test
    void tailShorterThanABlockIsItsOwnBlock() {
        SplittableRandom r = new SplittableRandom(7);
        float[] x = new float[3 + 32 + 32 + 9];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) r.nextGaussian() * (i < 3 + 64 ? 1f : 100f);
        }
        for (ElementFormat f : ElementFormat.values()) {
            float[] y = x.clone();
            MxCodec.qdqInPlace(y, 3, x.length - 3, f);
            assertThat(Arrays.copyOf(y, 3)).isEqualTo(Arrays.copyOf(x, 3));
            for (int b = 3; b < x.length; b += 32) {
                int n = Math.min(32, x.length - b);
                float[] block = Arrays.copyOfRange(x, b, b + n);
                MxCodec.qdqInPlace(block, 0, n, f);
                assertThat(Arrays.copyOfRange(y, b, b + n)).as("%s block at %d", f, b).isEqualTo(block);
            }
        }
    }

    @Test
    void allZeroAndNanBlocks() {
        float[] zeros = new float[32];
        zeros[5] = -0f;
        MxCodec.qdqInPlace(zeros, 0, 32, ElementFormat.E2M1);
        for (float v : zeros) {
            assertThat(v).isZero();
        }
        assertThat(Float.floatToRawIntBits(zeros[5])).isEqualTo(0x80000000);
        float[] nan = new float[32];
        nan[3] = Float.NaN;
        assertThat(MxCodec.sharedScaleCode(nan, 0, 32, ElementFormat.E2M1)).isEqualTo(255);
        MxCodec.qdqInPlace(nan, 0, 32, ElementFormat.E2M1);
        for (float v : nan) {
            assertThat(v).isNaN();
        }
    }

    @Property(tries = 200)
    void fp4PackingRoundTrips(@ForAll @IntRange(min = 0, max = 67) int n, @ForAll long seed) {
        byte[] codes = randomCodes(n, 4, seed);
        byte[] packed = new byte[MxCodec.packedBytes(ElementFormat.E2M1, n)];
        MxCodec.packFp4(codes, n, packed);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(Math.max(1, packed.length));
            MemorySegment.copy(packed, 0, seg, ValueLayout.JAVA_BYTE, 0, packed.length);
            for (int i = 0; i < n; i++) {
                assertThat(MxCodec.fp4Code(packed, i)).isEqualTo(codes[i]);
                assertThat(MxCodec.fp4Code(seg, i)).isEqualTo(codes[i]);
                int nibble = (packed[i / 2] >> (i % 2 == 0 ? 0 : 4)) & 0xF; // even element low
                assertThat(nibble).isEqualTo(codes[i]);
            }
        }
        if ((n & 1) == 1) {
            assertThat(packed[n / 2] & 0xF0).isZero();
        }
        byte[] back = new byte[n];
        MxCodec.unpack(packed, ElementFormat.E2M1, n, back, 0);
        assertThat(back).isEqualTo(codes);
    }

    @Property(tries = 200)
    void fp6PackingRoundTrips(@ForAll @IntRange(min = 0, max = 67) int n, @ForAll long seed) {
        byte[] codes = randomCodes(n, 6, seed);
        byte[] packed = new byte[MxCodec.packedBytes(ElementFormat.E3M2, n)];
        MxCodec.packFp6(codes, n, packed);
        try (Arena arena = Arena.ofConfined()) {
            // Exactly sized, so a reader that touches a byte past the last code fails.
            MemorySegment seg = arena.allocate(Math.max(1, packed.length)).asSlice(0, packed.length);
            MemorySegment.copy(packed, 0, seg, ValueLayout.JAVA_BYTE, 0, packed.length);
            for (int i = 0; i < n; i++) {
                assertThat(MxCodec.fp6Code(packed, i)).isEqualTo(codes[i]);
                assertThat(MxCodec.fp6Code(seg, i)).isEqualTo(codes[i]);
            }
        }
        for (int g = 0; g + 4 <= n; g += 4) {
            int word = (packed[3 * g / 4] & 0xFF) | (packed[3 * g / 4 + 1] & 0xFF) << 8
                    | (packed[3 * g / 4 + 2] & 0xFF) << 16;
            assertThat(word).isEqualTo(codes[g] | codes[g + 1] << 6 | codes[g + 2] << 12 | codes[g + 3] << 18);
        }
        byte[] back = new byte[n];
        MxCodec.unpack(packed, ElementFormat.E2M3, n, back, 0);
        assertThat(back).isEqualTo(codes);
    }

    @ParameterizedTest
    @EnumSource(ElementFormat.class)
    void decodeRowMatchesQdq(ElementFormat f) {
        SplittableRandom r = new SplittableRandom(f.ordinal() + 11);
        int rows = 5;
        int cols = 96;
        int blocksPerRow = cols / 32;
        int rowBytes = MxCodec.packedBytes(f, cols);
        long codeBase = 3; // deliberately unaligned
        long scaleBase = 5;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment codesSeg = arena.allocate(codeBase + (long) rows * rowBytes).asSlice(0,
                    codeBase + (long) rows * rowBytes);
            MemorySegment scalesSeg = arena.allocate(scaleBase + (long) rows * blocksPerRow);
            float[][] expected = new float[rows][];
            for (int row = 0; row < rows; row++) {
                float[] x = new float[cols];
                for (int i = 0; i < cols; i++) {
                    x[i] = (float) (r.nextGaussian() * Math.pow(2, r.nextInt(-30, 30)));
                }
                if (row == 2) {
                    Arrays.fill(x, 32, 64, 0f);
                }
                byte[] codes = new byte[cols];
                byte[] scales = new byte[blocksPerRow];
                assertThat(MxCodec.quantize(x, 0, cols, f, codes, 0, scales, 0)).isEqualTo(blocksPerRow);
                byte[] packed = new byte[rowBytes];
                switch (f.bits()) {
                    case 4 -> MxCodec.packFp4(codes, cols, packed);
                    case 6 -> MxCodec.packFp6(codes, cols, packed);
                    default -> System.arraycopy(codes, 0, packed, 0, cols);
                }
                MemorySegment.copy(packed, 0, codesSeg, ValueLayout.JAVA_BYTE, codeBase + (long) row * rowBytes,
                        rowBytes);
                MemorySegment.copy(scales, 0, scalesSeg, ValueLayout.JAVA_BYTE,
                        scaleBase + (long) row * blocksPerRow, blocksPerRow);
                expected[row] = x.clone();
                MxCodec.qdqInPlace(expected[row], 0, cols, f);
            }
            for (int row = 0; row < rows; row++) {
                float[] out = new float[cols + 7];
                MxCodec.decodeRow(codesSeg, codeBase + (long) row * rowBytes, scalesSeg,
                        scaleBase + (long) row * blocksPerRow, cols, f, out, 7);
                assertThat(Arrays.copyOfRange(out, 7, 7 + cols)).as("%s row %d", f, row).isEqualTo(expected[row]);
            }
        }
    }

    @Test
    void decodeRowRejectsPartialBlocks() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment seg = arena.allocate(64);
            assertThatThrownBy(() -> MxCodec.decodeRow(seg, 0, seg, 0, 40, ElementFormat.E2M1, new float[40], 0))
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    private static byte[] randomCodes(int n, int bits, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        byte[] codes = new byte[n];
        for (int i = 0; i < n; i++) {
            codes[i] = (byte) r.nextInt(1 << bits);
        }
        return codes;
    }

    @Provide
    Arbitrary<Float> positiveNormals() {
        return Arbitraries.integers().between(0x00800000, 0x7F7FFFFF).map(Float::intBitsToFloat);
    }

    @Provide
    Arbitrary<float[]> blocks() {
        return Arbitraries.integers().between(-40, 40).flatMap(e -> Arbitraries.floats().between(-8f, 8f)
                .map(v -> Math.scalb(v, e)).array(float[].class).ofMinSize(1).ofMaxSize(32));
    }
}
