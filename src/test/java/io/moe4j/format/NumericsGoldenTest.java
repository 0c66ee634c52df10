package io.moe4j.format;

import static io.moe4j.format.Goldens.assertBitExact;
import static io.moe4j.format.Goldens.assertExact;
import static io.moe4j.format.Goldens.unsigned;
import static org.assertj.core.api.Assertions.assertThat;

import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsFile;
import io.moe4j.safetensors.Tensor;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every tensor family of ../shared/conformance/numerics.safetensors (made with ml_dtypes and the reference
 * quantizers, outside this project), reproduced bit for bit.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NumericsGoldenTest {

    /** The golden-file prefix of each element format. */
    enum Family {
        FP4_E2M1("fp4_e2m1", ElementFormat.E2M1),
        FP6_E3M2("fp6_e3m2", ElementFormat.E3M2),
        FP6_E2M3("fp6_e2m3", ElementFormat.E2M3),
        FP8_E4M3FN("fp8_e4m3fn", ElementFormat.E4M3FN),
        FP8_E5M2("fp8_e5m2", ElementFormat.E5M2);

        final String prefix;
        final ElementFormat format;

        Family(String prefix, ElementFormat format) {
            this.prefix = prefix;
            this.format = format;
        }
    }

    /** The MX families of the goldens (names under mx_*). */
    enum Mx {
        FP4("mx_fp4", ElementFormat.E2M1),
        FP6_E3M2("mx_fp6_e3m2", ElementFormat.E3M2),
        FP6_E2M3("mx_fp6_e2m3", ElementFormat.E2M3);

        final String prefix;
        final ElementFormat format;

        Mx(String prefix, ElementFormat format) {
            this.prefix = prefix;
            this.format = format;
        }
    }

    private SafetensorsFile file;

    @BeforeAll
    void open() {
        file = SafetensorsFile.open(Goldens.numerics());
    }

    @AfterAll
    void close() {
        if (file != null) {
            file.close();
        }
    }

    @Test
    void goldenFileMatchesItsChecksum() throws IOException {
        Path golden = Goldens.numerics();
        assertThat(Goldens.sha256(golden)).as("sha256 of %s", golden)
                .isEqualTo(Goldens.expectedSha256(golden.resolveSibling("SHA256SUMS"), "numerics.safetensors"));
    }

    // ------------------------------------------------------------------------------------------ elements

    @ParameterizedTest
    @EnumSource(Family.class)
    void decodeOfEveryCode(Family family) {
        Tensor t = file.tensor(family.prefix + "_decode").expect(DType.F32, family.format.codeCount());
        assertBitExact(family.prefix + "_decode", t.toFloatArray(), family.format.decodeTable(), 0);
    }

    @Test
    void e8m0DecodeOfEveryCode() {
        float[] expected = file.tensor("e8m0_decode").expect(DType.F32, 256).toFloatArray();
        float[] actual = new float[256];
        for (int c = 0; c < 256; c++) {
            actual[c] = E8m0.decode(c);
        }
        assertBitExact("e8m0_decode", expected, actual, 0);
    }

    @ParameterizedTest
    @EnumSource(Family.class)
    void saturatingRoundHalfEvenCodes(Family family) {
        float[] x = file.tensor("x").expect(DType.F32, -1).toFloatArray();
        int[] expected = unsigned(file.tensor(family.prefix + "_codes_sat").expect(DType.U8, x.length).toByteArray());
        int[] actual = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            actual[i] = family.format.encode(x[i]);
        }
        assertExact(family.prefix + "_codes_sat", expected, actual, 0, x);
    }

    // ------------------------------------------------------------------------------------------ MX blocks

    @ParameterizedTest
    @EnumSource(Mx.class)
    void mxSharedScales(Mx mx) {
        float[] x = file.tensor("mx_blocks").expect(DType.F32, 256, 32).toFloatArray();
        int[] expected = unsigned(file.tensor(mx.prefix + "_scale_e8m0").expect(DType.U8, 256).toByteArray());
        int[] actual = new int[256];
        for (int row = 0; row < 256; row++) {
            actual[row] = MxCodec.sharedScaleCode(x, row * 32, 32, mx.format);
        }
        assertExact(mx.prefix + "_scale_e8m0", expected, actual, 0, null);
    }

    @ParameterizedTest
    @EnumSource(Mx.class)
    void mxCodes(Mx mx) {
        float[] x = file.tensor("mx_blocks").toFloatArray();
        int[] expected = unsigned(file.tensor(mx.prefix + "_codes").expect(DType.U8, 256, 32).toByteArray());
        byte[] codes = new byte[x.length];
        byte[] scales = new byte[256];
        int[] scaleCodes = new int[256];
        for (int row = 0; row < 256; row++) {
            scaleCodes[row] = MxCodec.quantizeBlock(x, row * 32, 32, mx.format, codes, row * 32);
        }
        assertExact(mx.prefix + "_codes", expected, unsigned(codes), 32, x);
        // The row-wide quantize gives the same codes and scales as block-by-block.
        byte[] codes2 = new byte[x.length];
        assertThat(MxCodec.quantize(x, 0, x.length, mx.format, codes2, 0, scales, 0)).isEqualTo(256);
        assertThat(codes2).isEqualTo(codes);
        assertExact(mx.prefix + " quantize() scales", scaleCodes, unsigned(scales), 0, null);
    }

    @ParameterizedTest
    @EnumSource(Mx.class)
    void mxQuantizeDequantize(Mx mx) {
        float[] x = file.tensor("mx_blocks").toFloatArray();
        float[] expected = file.tensor(mx.prefix + "_qdq").expect(DType.F32, 256, 32).toFloatArray();
        float[] actual = x.clone();
        MxCodec.qdqInPlace(actual, 0, actual.length, mx.format);
        assertBitExact(mx.prefix + "_qdq", expected, actual, 32);
    }

    @ParameterizedTest
    @EnumSource(Mx.class)
    void mxPacked(Mx mx) {
        byte[] codes = file.tensor(mx.prefix + "_codes").toByteArray();
        int rowBytes = MxCodec.packedBytes(mx.format, 32);
        int[] expected = unsigned(file.tensor(mx.prefix + "_packed").expect(DType.U8, 256, rowBytes).toByteArray());
        byte[] packed = new byte[256 * rowBytes];
        if (mx.format.bits() == 4) {
            MxCodec.packFp4(codes, codes.length, packed);
        } else {
            MxCodec.packFp6(codes, codes.length, packed);
        }
        assertExact(mx.prefix + "_packed", expected, unsigned(packed), rowBytes, null);
        // And the element readers recover every code from the golden packing.
        MemorySegment seg = file.tensor(mx.prefix + "_packed").segment();
        int[] read = new int[codes.length];
        for (int i = 0; i < codes.length; i++) {
            read[i] = mx.format.bits() == 4 ? MxCodec.fp4Code(seg, i) : MxCodec.fp6Code(seg, i);
        }
        assertExact(mx.prefix + "_packed read back", unsigned(codes), read, 32, null);
    }

    @ParameterizedTest
    @EnumSource(Mx.class)
    void mxDecodeRowOfTheGoldenPacking(Mx mx) {
        MemorySegment packed = file.tensor(mx.prefix + "_packed").segment();
        MemorySegment scales = file.tensor(mx.prefix + "_scale_e8m0").segment();
        float[] expected = file.tensor(mx.prefix + "_qdq").toFloatArray();
        int rowBytes = MxCodec.packedBytes(mx.format, 32);
        // Two rows of 64 (each two blocks) and the rest row by row, so that multi-block rows are covered too.
        float[] actual = new float[expected.length];
        for (int row = 0; row < 4; row += 2) {
            MxCodec.decodeRow(packed, (long) row * rowBytes, scales, row, 64, mx.format, actual, row * 32);
        }
        for (int row = 4; row < 256; row++) {
            MxCodec.decodeRow(packed, (long) row * rowBytes, scales, row, 32, mx.format, actual, row * 32);
        }
        assertBitExact(mx.prefix + " decodeRow", expected, actual, 32);
    }

    // ------------------------------------------------------------------------------------------ NVFP4

    private float nvfp4GlobalScale() {
        return file.tensor("nvfp4_global_scale").expect(DType.F32, 1).toFloatArray()[0];
    }

    @Test
    void nvfp4CodesAndBlockScales() {
        float[] x = file.tensor("nvfp4_x").expect(DType.F32, 64, 64).toFloatArray();
        float g = nvfp4GlobalScale();
        byte[] codes = new byte[x.length];
        byte[] scales = new byte[x.length / 16];
        for (int row = 0; row < 64; row++) {
            Nvfp4Codec.quantize(x, row * 64, 64, g, codes, row * 64, scales, row * 4);
        }
        int[] expectedScales = unsigned(file.tensor("nvfp4_block_scale_e4m3").expect(DType.U8, 64, 4).toByteArray());
        assertExact("nvfp4_block_scale_e4m3", expectedScales, unsigned(scales), 4, null);
        int[] expectedCodes = unsigned(file.tensor("nvfp4_codes").expect(DType.U8, 64, 64).toByteArray());
        assertExact("nvfp4_codes", expectedCodes, unsigned(codes), 64, x);
        byte[] packed = new byte[x.length / 2];
        MxCodec.packFp4(codes, codes.length, packed);
        int[] expectedPacked = unsigned(file.tensor("nvfp4_packed").expect(DType.U8, 64, 32).toByteArray());
        assertExact("nvfp4_packed", expectedPacked, unsigned(packed), 32, null);
    }

    @Test
    void nvfp4QuantizeDequantize() {
        float[] x = file.tensor("nvfp4_x").toFloatArray();
        float[] expected = file.tensor("nvfp4_qdq").expect(DType.F32, 64, 64).toFloatArray();
        float[] actual = x.clone();
        Nvfp4Codec.qdqInPlace(actual, 0, actual.length, nvfp4GlobalScale());
        assertBitExact("nvfp4_qdq", expected, actual, 64);
    }

    @Test
    void nvfp4DecodeRowOfTheGoldenPacking() {
        MemorySegment packed = file.tensor("nvfp4_packed").segment();
        MemorySegment scales = file.tensor("nvfp4_block_scale_e4m3").segment();
        float[] expected = file.tensor("nvfp4_qdq").toFloatArray();
        float[] actual = new float[expected.length];
        float g = nvfp4GlobalScale();
        for (int row = 0; row < 64; row++) {
            Nvfp4Codec.decodeRow(packed, row * 32L, scales, row * 4L, 64, g, actual, row * 64);
        }
        assertBitExact("nvfp4 decodeRow", expected, actual, 64);
    }

    // ------------------------------------------------------------------------------------------ activations

    @Test
    void fp8PerToken() {
        float[] actual = actX();
        for (int t = 0; t < 32; t++) {
            Fp8Quant.qdqPerToken(actual, t * 256, 256);
        }
        assertBitExact("act_fp8_per_token_qdq", golden("act_fp8_per_token_qdq"), actual, 256);
    }

    @Test
    void fp8Group128() {
        float[] actual = actX();
        for (int t = 0; t < 32; t++) {
            Fp8Quant.qdqGroup(actual, t * 256, 256, 128);
        }
        assertBitExact("act_fp8_group128_qdq", golden("act_fp8_group128_qdq"), actual, 256);
    }

    @Test
    void int8PerToken() {
        float[] actual = actX();
        for (int t = 0; t < 32; t++) {
            Int8Quant.qdqPerToken(actual, t * 256, 256);
        }
        assertBitExact("act_int8_per_token_qdq", golden("act_int8_per_token_qdq"), actual, 256);
    }

    private float[] actX() {
        return file.tensor("act_x").expect(DType.F32, 32, 256).toFloatArray();
    }

    private float[] golden(String name) {
        return file.tensor(name).expect(DType.F32, 32, 256).toFloatArray();
    }

    // ------------------------------------------------------------------------------------------ int packing

    @ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(ints = {4, 8})
    void intPacking(int bits) {
        int[] values = file.tensor("int" + bits + "_values").expect(DType.I8, 16, 64).toIntArray();
        int per = 32 / bits;
        int[] expected = file.tensor("int" + bits + "_packed_int32").expect(DType.I32, 16, 64 / per).toIntArray();
        int[] packed = new int[expected.length];
        for (int row = 0; row < 16; row++) {
            int[] words = IntPacking.pack(Arrays.copyOfRange(values, row * 64, row * 64 + 64), bits);
            System.arraycopy(words, 0, packed, row * words.length, words.length);
        }
        assertExact("int" + bits + "_packed_int32", expected, packed, 64 / per, null);
        int[] unpacked = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            unpacked[i] = IntPacking.unpack(expected[i / per], bits, i % per);
        }
        assertExact("int" + bits + "_values unpacked", values, unpacked, 64, null);
    }
}
