package io.moe4j.model.linear;

import io.moe4j.format.Bf16;
import io.moe4j.format.ElementFormat;
import io.moe4j.format.Fp8Quant;
import io.moe4j.format.Int8Quant;
import io.moe4j.format.IntPacking;
import io.moe4j.quant.WeightFormat;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The schemes no whole-model fixture has, on small checkpoints written here from known codes and scales: the
 * expected weight is computed from those numbers, not read back through the quant classes.
 */
class LinearSchemesTest {
    private static final int OUT = 40;   // not a multiple of the 8-row panels
    private static final int IN = 256;

    /** Loads module "m" on both backends and checks both against W·qdq(x) + bias in float64. */
    private static void check(Path dir, QuantizationConfig q, double[][] w, double[] bias, Consumer<float[]> qdq,
                              WeightFormat expectedFormat) {
        int tokens = 6;
        Random rnd = new Random(5);
        float[] x = new float[tokens * IN];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        double[] expected = new double[tokens * OUT];
        for (int t = 0; t < tokens; t++) {
            float[] xq = Arrays.copyOfRange(x, t * IN, (t + 1) * IN);
            qdq.accept(xq);
            for (int r = 0; r < OUT; r++) {
                double acc = bias == null ? 0 : bias[r];
                for (int c = 0; c < IN; c++) {
                    acc += w[r][c] * xq[c];
                }
                expected[t * OUT + r] = acc;
            }
        }
        try (Checkpoint ckpt = Checkpoint.open(dir)) {
            for (Linears.Backend b : Linears.Backend.values()) {
                try (LinearFactory f = Linears.factory(ckpt, q, b, 2)) {
                    LoadedLinear linear = (LoadedLinear) f.load("m", IN, OUT, bias != null);
                    assertThat(linear.scheme().weights()).isEqualTo(expectedFormat);
                    assertThat(linear.quantized()).isTrue();
                    for (int n : new int[]{1, tokens}) {
                        float[] y = new float[n * OUT];
                        linear.forward(x, n, y);
                        double num = 0;
                        double den = 0;
                        for (int i = 0; i < n * OUT; i++) {
                            num += (y[i] - expected[i]) * (y[i] - expected[i]);
                            den += expected[i] * expected[i];
                        }
                        assertThat(Math.sqrt(num / den)).as("%s, %d tokens: %s", b, n, linear.describe())
                                .isLessThan(b == Linears.Backend.EMULATION ? 1e-6 : 1e-5);
                    }
                }
            }
        }
    }

    private static int[] randomInts(Random r, int n, int lo, int hi) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = lo + r.nextInt(hi - lo + 1);
        }
        return v;
    }

    @Test
    void packQuantizedInt4WithZeroPointsAndActOrder(@TempDir Path dir) {
        Random r = new Random(1);
        int group = 64;
        int groups = IN / group;
        int[] v = randomInts(r, OUT * IN, -8, 7);
        int[] z = randomInts(r, OUT * groups, -8, 7);
        float[] s = new float[OUT * groups];
        for (int i = 0; i < s.length; i++) {
            s[i] = 0.01f + r.nextFloat() * 0.05f;
        }
        // Act order: each column's group is chosen at random, 64 columns a group.
        int[] gIdx = new int[IN];
        for (int c = 0; c < IN; c++) {
            gIdx[c] = c % groups;
        }
        for (int c = IN - 1; c > 0; c--) {
            int k = r.nextInt(c + 1);
            int t = gIdx[c];
            gIdx[c] = gIdx[k];
            gIdx[k] = t;
        }
        double[][] w = new double[OUT][IN];
        for (int row = 0; row < OUT; row++) {
            for (int c = 0; c < IN; c++) {
                int g = gIdx[c];
                w[row][c] = (v[row * IN + c] - z[row * groups + g]) * (double) s[row * groups + g];
            }
        }
        int[] packed = new int[OUT * IN / 8];
        for (int row = 0; row < OUT; row++) {
            int[] words = IntPacking.pack(Arrays.copyOfRange(v, row * IN, (row + 1) * IN), 4);
            System.arraycopy(words, 0, packed, row * IN / 8, words.length);
        }
        // Zero points packed along rows: word (row / 8, g) holds rows row..row+7 at 4-bit fields, offset-binary.
        int[] zp = new int[OUT / 8 * groups];
        for (int row = 0; row < OUT; row++) {
            for (int g = 0; g < groups; g++) {
                zp[(row / 8) * groups + g] |= (z[row * groups + g] + 8) << ((row % 8) * 4);
            }
        }
        SafetensorsWriter t = new SafetensorsWriter()
                .addI32("m.weight_packed", new long[]{OUT, IN / 8}, packed)
                .addF32("m.weight_scale", new long[]{OUT, groups}, s)
                .addI32("m.weight_zero_point", new long[]{OUT / 8, groups}, zp)
                .addI32("m.weight_g_idx", new long[]{IN}, gIdx)
                .addI64("m.weight_shape", new long[]{2}, new long[]{OUT, IN});
        QuantizationConfig q = SyntheticCheckpoint.write(dir, """
                {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
                 "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
                 "symmetric": false, "group_size": 64, "strategy": "group", "actorder": "group"}}}}""", t);
        check(dir, q, w, null, x -> { }, WeightFormat.INT4_GROUP);
    }

    @Test
    void fp8PerChannelWeightsWithDynamicPerTokenInputAndABias(@TempDir Path dir) {
        Random r = new Random(2);
        byte[] codes = new byte[OUT * IN];
        float[] s = new float[OUT];
        float[] bias = new float[OUT];
        double[][] w = new double[OUT][IN];
        for (int row = 0; row < OUT; row++) {
            s[row] = 0.001f + r.nextFloat() * 0.01f;
            bias[row] = (float) r.nextGaussian();
            for (int c = 0; c < IN; c++) {
                int code;
                do {
                    code = r.nextInt(256);
                } while ((code & 0x7F) == 0x7F); // not NaN
                codes[row * IN + c] = (byte) code;
                w[row][c] = ElementFormat.E4M3FN.decode(code) * (double) s[row];
            }
        }
        SafetensorsWriter t = new SafetensorsWriter()
                .add("m.weight", DType.F8_E4M3, new long[]{OUT, IN}, codes)
                .addF32("m.weight_scale", new long[]{OUT, 1}, s)
                .addBf16("m.bias", new long[]{OUT}, bias);
        QuantizationConfig q = SyntheticCheckpoint.write(dir, """
                {"quant_method": "compressed-tensors", "format": "float-quantized",
                 "config_groups": {"group_0": {"targets": ["Linear"],
                 "weights": {"num_bits": 8, "type": "float", "symmetric": true, "strategy": "channel", "dynamic": false},
                 "input_activations": {"num_bits": 8, "type": "float", "symmetric": true, "strategy": "token",
                 "dynamic": true}}}}""", t);
        double[] b = new double[OUT];
        for (int i = 0; i < OUT; i++) {
            b[i] = Bf16.round(bias[i]);
        }
        check(dir, q, w, b, x -> Fp8Quant.qdqPerToken(x, 0, IN), WeightFormat.FP8_CHANNEL);
    }

    @Test
    void int8W8a8PerChannelWithStaticInputScale(@TempDir Path dir) {
        Random r = new Random(3);
        int[] v = randomInts(r, OUT * IN, -128, 127);
        byte[] codes = new byte[OUT * IN];
        float[] s = new float[OUT];
        double[][] w = new double[OUT][IN];
        for (int row = 0; row < OUT; row++) {
            s[row] = 0.001f + r.nextFloat() * 0.01f;
            for (int c = 0; c < IN; c++) {
                codes[row * IN + c] = (byte) v[row * IN + c];
                w[row][c] = v[row * IN + c] * (double) s[row];
            }
        }
        float inputScale = 0.02f;
        SafetensorsWriter t = new SafetensorsWriter()
                .add("m.weight", DType.I8, new long[]{OUT, IN}, codes)
                .addF32("m.weight_scale", new long[]{OUT}, s)
                .addF32("m.input_scale", new long[0], new float[]{inputScale});
        QuantizationConfig q = SyntheticCheckpoint.write(dir, """
                {"quant_method": "quark", "export": {}, "exclude": ["lm_head"], "global_quant_config": {
                 "weight": {"dtype": "int8", "qscheme": "per_channel", "is_dynamic": false, "symmetric": true},
                 "input_tensors": {"dtype": "int8", "qscheme": "per_tensor", "is_dynamic": false, "symmetric": true}}}""",
                t);
        check(dir, q, w, null, x -> Int8Quant.qdqStatic(x, 0, IN, inputScale, 0), WeightFormat.INT8_CHANNEL);
    }

    @Test
    void quarkMxfp6WeightsWithStaticFp8Input(@TempDir Path dir) {
        Random r = new Random(4);
        int blocks = IN / 32;
        byte[] codes = new byte[OUT * IN];
        byte[] scales = new byte[OUT * blocks];
        double[][] w = new double[OUT][IN];
        for (int row = 0; row < OUT; row++) {
            for (int b = 0; b < blocks; b++) {
                scales[row * blocks + b] = (byte) (120 + r.nextInt(6));
            }
            for (int c = 0; c < IN; c++) {
                int code = r.nextInt(64);
                codes[row * IN + c] = (byte) code;
                w[row][c] = ElementFormat.E2M3.decode(code)
                        * (double) io.moe4j.format.E8m0.decode(scales[row * blocks + c / 32] & 0xFF);
            }
        }
        byte[] packed = new byte[OUT * IN * 3 / 4];
        io.moe4j.format.MxCodec.packFp6(codes, OUT * IN, packed);
        float inputScale = 0.01f;
        SafetensorsWriter t = new SafetensorsWriter()
                .add("m.weight", DType.U8, new long[]{OUT, IN * 3 / 4}, packed)
                .add("m.weight_scale", DType.U8, new long[]{OUT, blocks}, scales)
                .addF32("m.input_scale", new long[0], new float[]{inputScale});
        QuantizationConfig q = SyntheticCheckpoint.write(dir, """
                {"quant_method": "quark", "export": {}, "exclude": [], "global_quant_config": {
                 "weight": {"dtype": "fp6_e2m3", "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"},
                 "input_tensors": {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": false}}}""", t);
        check(dir, q, w, null, x -> Fp8Quant.qdqStatic(x, 0, IN, inputScale), WeightFormat.MXFP6_E2M3);
    }

    @Test
    void int4ValuesWithGroupScalesAndDynamicInt8Input(@TempDir Path dir) {
        Random r = new Random(6);
        int group = 32;
        int groups = IN / group;
        int[] v = randomInts(r, OUT * IN, -8, 7);
        byte[] values = new byte[OUT * IN];
        float[] s = new float[OUT * groups];
        for (int i = 0; i < s.length; i++) {
            s[i] = Bf16.round(0.01f + r.nextFloat() * 0.05f);
        }
        double[][] w = new double[OUT][IN];
        for (int row = 0; row < OUT; row++) {
            for (int c = 0; c < IN; c++) {
                values[row * IN + c] = (byte) v[row * IN + c];
                w[row][c] = v[row * IN + c] * (double) s[row * groups + c / group];
            }
        }
        SafetensorsWriter t = new SafetensorsWriter()
                .add("m.weight", DType.I8, new long[]{OUT, IN}, values)
                .addBf16("m.weight_scale", new long[]{OUT, groups}, s);
        QuantizationConfig q = SyntheticCheckpoint.write(dir, """
                {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"g": {
                 "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": true,
                 "strategy": "group", "group_size": 32}, "input_activations": {"num_bits": 8, "type": "int",
                 "symmetric": true, "strategy": "token", "dynamic": true}}}}""", t);
        check(dir, q, w, null, x -> Int8Quant.qdqPerToken(x, 0, IN), WeightFormat.INT4_GROUP);
    }
}
