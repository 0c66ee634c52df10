package io.moe4j.quant;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.format.IntPacking;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.quant.method.CtWNA16Method;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.SafetensorsWriter;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CtWNA16MethodTest extends CtTestSupport {


    @ParameterizedTest
    @ValueSource(strings = {"qwen3_ct_w4a16_g128", "mixtral_ct_w8a16_channel"})
    void packQuantizedCasesUnpackToSignedCodes(String name) {
        try (var c = Cases.open(name); Arena arena = Arena.ofConfined()) {
            assertThat(c.method()).isInstanceOf(CtWNA16Method.class);
            ExpertWeights w = c.load(arena);
            int bits = name.contains("w4") ? 4 : 8;
            assertThat(w.scheme().name()).isEqualTo(bits == 4 ? "compressed-tensors W4A16 g128" : "compressed-tensors W8A16 channel");
            assertThat(w.scheme().weights()).isEqualTo(bits == 4 ? WeightFormat.INT4_GROUP : WeightFormat.INT8_CHANNEL);
            assertThat(w.w13().codes()).isEqualTo(bits == 4 ? CodeType.INT4 : CodeType.INT8);
            assertThat(w.a13()).isEqualTo(ActivationQuant.NONE);
            checkRows(c, w, (cc, e, p, r, col) -> {
                Tensor packed = t(cc, e, p, "weight_packed");
                Tensor scale = t(cc, e, p, "weight_scale");
                int per = 32 / bits;
                int word = packed.segment().get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN),
                        ((long) r * packed.shape()[1] + col / per) * 4);
                int q = ((word >>> (bits * (col % per))) & ((1 << bits) - 1)) - (1 << (bits - 1));
                long groups = scale.shape()[1];
                int cols = (int) packed.shape()[1] * per;
                return q * (double) scale.getFloat(r * groups + col / (cols / groups));
            });
        }
    }

    /** A synthetic asymmetric act-order int4 checkpoint: (q − zp[r, g_idx[c]]) · s[r, g_idx[c]]. */
    @Test
    void wna16ActOrderAndAsymmetricZeroPoints(@TempDir Path dir) throws Exception {
        int experts = 2;
        int h = 64;
        int inter = 32;
        int group = 32;
        ObjectNode cfg = (ObjectNode) QuantizationConfigTest.JSON.readTree(Cases.dir("qwen3_bf16_nonorm").resolve("config.json").toFile());
        cfg.put("num_experts", experts).put("moe_intermediate_size", inter).put("hidden_size", h);
        cfg.set("quantization_config", QuantizationConfigTest.JSON.readTree("""
                {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
                 "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": false, "group_size": 32,
                 "strategy": "group", "dynamic": false, "actorder": "group"}, "format": "pack-quantized"}},
                 "ignore": ["lm_head"]}"""));
        Files.writeString(dir.resolve("config.json"), cfg.toString());
        Random rnd = new Random(7);
        SafetensorsWriter wr = new SafetensorsWriter();
        int[][][][] q = new int[experts][3][][];
        int[][][][] zp = new int[experts][3][][];
        float[][][][] sc = new float[experts][3][][];
        int[][] gidx = new int[experts][];
        String[] names = {"gate_proj", "up_proj", "down_proj"};
        for (int e = 0; e < experts; e++) {
            gidx[e] = new int[h];
            for (int col = 0; col < h; col++) {
                gidx[e][col] = rnd.nextInt(h / group);
            }
            for (int p = 0; p < 3; p++) {
                int rows = p == 2 ? h : inter;
                int cols = p == 2 ? inter : h;
                int groups = cols / group;
                q[e][p] = new int[rows][cols];
                zp[e][p] = new int[rows][groups];
                sc[e][p] = new float[rows][groups];
                int[] flat = new int[rows * cols];
                float[] sflat = new float[rows * groups];
                int[] zT = new int[groups * rows];
                for (int r = 0; r < rows; r++) {
                    for (int col = 0; col < cols; col++) {
                        q[e][p][r][col] = rnd.nextInt(16) - 8;
                        flat[r * cols + col] = q[e][p][r][col];
                    }
                    for (int g = 0; g < groups; g++) {
                        zp[e][p][r][g] = rnd.nextInt(16) - 8;
                        sc[e][p][r][g] = 0.01f * (1 + rnd.nextInt(100));
                        sflat[r * groups + g] = sc[e][p][r][g];
                        zT[g * rows + r] = zp[e][p][r][g];
                    }
                }
                int[] words = new int[rows * cols / 8];
                for (int r = 0; r < rows; r++) {
                    int[] row = java.util.Arrays.copyOfRange(flat, r * cols, (r + 1) * cols);
                    System.arraycopy(IntPacking.pack(row, 4), 0, words, r * cols / 8, cols / 8);
                }
                // zero points packed along rows: word [r/8, g] holds rows r..r+7 of group g
                int[] zWords = new int[rows / 8 * groups];
                for (int g = 0; g < groups; g++) {
                    int[] col = java.util.Arrays.copyOfRange(zT, g * rows, (g + 1) * rows);
                    int[] packed = IntPacking.pack(col, 4);
                    for (int k = 0; k < rows / 8; k++) {
                        zWords[k * groups + g] = packed[k];
                    }
                }
                String base = "model.layers.0.mlp.experts." + e + "." + names[p] + ".";
                wr.addI32(base + "weight_packed", new long[]{rows, cols / 8}, words);
                wr.addBf16(base + "weight_scale", new long[]{rows, groups}, sflat);
                wr.addI32(base + "weight_zero_point", new long[]{rows / 8, groups}, zWords);
                wr.addI64(base + "weight_shape", new long[]{2}, new long[]{rows, cols});
                int[] g = p == 2 ? new int[cols] : gidx[e];
                if (p == 2) {
                    for (int col = 0; col < cols; col++) {
                        g[col] = col / group;
                    }
                }
                wr.addI32(base + "weight_g_idx", new long[]{cols}, g);
            }
        }
        wr.write(dir.resolve("model.safetensors"));
        ModelConfig m = ModelConfig.load(dir);
        MoeLayerConfig layer = QuantizationConfigTest.layer0(m);
        QuantMethod method = QuantizationConfig.of(m).methodFor(layer);
        assertThat(method.scheme().name()).isEqualTo("compressed-tensors W4A16 g32 asymmetric act-order");
        assertThat(method.scheme().actOrder()).isTrue();
        try (Checkpoint ckpt = Checkpoint.open(dir); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = method.load(ckpt, layer, LoadOptions.ALL, arena);
            // gate and up share their g_idx here: one map per expert keeps the one-GEMM w13
            assertThat(w.w13().groupParts()).isEqualTo(1);
            for (int e = 0; e < experts; e++) {
                for (int r : new int[]{0, 5, inter + 3, 2 * inter - 1}) {
                    int p = r < inter ? 0 : 1;
                    int rr = r % inter;
                    double[] expect = new double[h];
                    for (int col = 0; col < h; col++) {
                        int g = gidx[e][col];
                        expect[col] = (q[e][p][rr][col] - zp[e][p][rr][g]) * (double) bf16(sc[e][p][rr][g]);
                    }
                    assertClose(Dequant.row(w.w13(), e, r), expect, "w13 e" + e + " r" + r);
                }
                double[] expect = new double[inter];
                for (int col = 0; col < inter; col++) {
                    expect[col] = (q[e][2][9][col] - zp[e][2][9][col / group]) * (double) bf16(sc[e][2][9][col / group]);
                }
                assertClose(Dequant.row(w.w2(), e, 9), expect, "w2 e" + e);
            }
        }
    }

    @Test
    void wna16NeedsPackQuantizedFormat() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_ct_w4a16_g128", """
                {"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"group_0": {
                 "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128, "strategy": "group"}}}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("For Fused MoE layers, only format: pack-quantized and bits: [4, 8] is supported but got "
                        + "format: int-quantized and bits: 4");
    }

    @Test
    void wna16UnsupportedBitsAreRefused() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_ct_w4a16_g128", """
                {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
                 "targets": ["Linear"], "weights": {"num_bits": 2, "type": "int", "group_size": 128, "strategy": "group"}}}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but got format: pack-quantized and bits: 2");
    }
}
