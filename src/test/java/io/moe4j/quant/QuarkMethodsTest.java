package io.moe4j.quant;

import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.format.ElementFormat;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.quant.method.QuarkQuantSpec;
import io.moe4j.quant.method.QuarkOcpMxMethod;
import io.moe4j.quant.method.QuarkW8A8Int8Method;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class QuarkMethodsTest {

    /** A sign/exponent/mantissa minifloat with no inf or NaN (E2M1, E3M2, E2M3), decoded by hand. */
    static double minifloat(int code, int ebits, int mbits, int bias) {
        int sign = (code >> (ebits + mbits)) & 1;
        int e = (code >> mbits) & ((1 << ebits) - 1);
        int m = code & ((1 << mbits) - 1);
        double v = e == 0 ? m / Math.pow(2, mbits) * Math.pow(2, 1 - bias) : (1 + m / Math.pow(2, mbits)) * Math.pow(2, e - bias);
        return sign == 1 ? -v : v;
    }

    /** Element (r, c) of a Quark packed MX weight (fp4 or fp6) and its E8M0 scale, decoded by hand. */
    static float mxElement(Tensor weight, Tensor scale, String dtype, int r, int c) {
        long rowBytes = weight.shape()[1];
        long base = r * rowBytes;
        int code;
        double v;
        if (dtype.equals("fp4")) {
            int b = weight.segment().get(ValueLayout.JAVA_BYTE, base + c / 2) & 0xFF;
            code = c % 2 == 0 ? b & 0xF : b >> 4;
            v = minifloat(code, 2, 1, 1);
        } else {
            long bit = 6L * c;
            int lo = weight.segment().get(ValueLayout.JAVA_BYTE, base + bit / 8) & 0xFF;
            int hi = bit / 8 + 1 < rowBytes ? weight.segment().get(ValueLayout.JAVA_BYTE, base + bit / 8 + 1) & 0xFF : 0;
            code = ((lo | hi << 8) >> (bit % 8)) & 0x3F;
            v = dtype.equals("fp6_e3m2") ? minifloat(code, 3, 2, 3) : minifloat(code, 2, 3, 1);
        }
        int s = scale.segment().get(ValueLayout.JAVA_BYTE, r * scale.shape()[1] + c / 32) & 0xFF;
        return (float) (v * Math.pow(2, s - 127));
    }

    @ParameterizedTest
    @CsvSource({
            "qwen3_quark_w_mxfp4, fp4, quark w_mxfp4, MXFP4, NONE",
            "qwen3_quark_w_mxfp4_a_mxfp4, fp4, quark w_mxfp4_a_mxfp4, MXFP4, MXFP4",
            "qwen3_quark_w_mxfp4_a_fp8, fp4, quark w_mxfp4_a_fp8, MXFP4, FP8_STATIC",
            "mixtral_quark_w_mxfp6_e3m2_a_mxfp6_e3m2, fp6_e3m2, quark w_mxfp6_e3m2_a_mxfp6_e3m2, MXFP6_E3M2, MXFP6_E3M2",
            "qwen3_quark_w_mxfp6_e2m3_a_mxfp6_e2m3, fp6_e2m3, quark w_mxfp6_e2m3_a_mxfp6_e2m3, MXFP6_E2M3, MXFP6_E2M3",
    })
    void ocpMxCasesLoadAndDecode(String name, String dtype, String scheme, WeightFormat wf, ActivationFormat af) {
        try (var c = Cases.open(name); Arena arena = Arena.ofConfined()) {
            assertThat(c.method()).isInstanceOf(QuarkOcpMxMethod.class);
            ExpertWeights w = c.load(arena);
            assertThat(w.scheme().name()).isEqualTo(scheme);
            assertThat(w.scheme().weights()).isEqualTo(wf);
            assertThat(w.scheme().activations()).isEqualTo(af);
            assertThat(w.a13().format()).isEqualTo(af);
            assertThat(w.a2().format()).isEqualTo(af);
            int inter = w.intermediate();
            for (int e : new int[]{0, w.numExperts() - 1}) {
                for (int r : new int[]{0, inter - 1, inter, 2 * inter - 1}) {
                    Projection p = r < inter ? Projection.GATE : Projection.UP;
                    Tensor wt = c.checkpoint().tensor(c.layer().experts().tensor(e, p, "weight"));
                    Tensor st = c.checkpoint().tensor(c.layer().experts().tensor(e, p, "weight_scale"));
                    float[] row = Dequant.row(w.w13(), e, r);
                    for (int col = 0; col < w.hidden(); col++) {
                        assertThat(row[col]).as("w13[%d,%d,%d]", e, r, col).isEqualTo(mxElement(wt, st, dtype, r % inter, col));
                    }
                }
                Tensor dw = c.checkpoint().tensor(c.layer().experts().tensor(e, Projection.DOWN, "weight"));
                Tensor ds = c.checkpoint().tensor(c.layer().experts().tensor(e, Projection.DOWN, "weight_scale"));
                float[] row = Dequant.row(w.w2(), e, 3);
                for (int col = 0; col < inter; col++) {
                    assertThat(row[col]).isEqualTo(mxElement(dw, ds, dtype, 3, col));
                }
            }
        }
    }

    @Test
    void staticFp8InputScalesCollapseToTheirMaximum() {
        try (var c = Cases.open("qwen3_quark_w_mxfp4_a_fp8"); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = c.load(arena);
            float max13 = 0;
            float max2 = 0;
            for (int e = 0; e < 8; e++) {
                for (Projection p : new Projection[]{Projection.GATE, Projection.UP}) {
                    max13 = Math.max(max13, c.checkpoint().tensor(c.layer().experts().tensor(e, p, "input_scale")).getFloat(0));
                }
                max2 = Math.max(max2, c.checkpoint().tensor(c.layer().experts().tensor(e, Projection.DOWN, "input_scale")).getFloat(0));
            }
            assertThat(((ActivationQuant.Fp8Static) w.a13()).scale()).hasSize(8).containsOnly(max13);
            assertThat(((ActivationQuant.Fp8Static) w.a2()).scale()).hasSize(8).containsOnly(max2);
            assertThat(((ActivationQuant.Mx) loadMx(arena)).element()).isEqualTo(ElementFormat.E2M1);
        }
    }

    private static ActivationQuant loadMx(Arena arena) {
        try (var c = Cases.open("qwen3_quark_w_mxfp4_a_mxfp4")) {
            return c.load(arena).a13();
        }
    }

    @Test
    void int8PerChannelStaticLoadsAndDecodes() {
        try (var c = Cases.open("qwen3_quark_int8_per_channel"); Arena arena = Arena.ofConfined()) {
            assertThat(c.method()).isInstanceOf(QuarkW8A8Int8Method.class);
            ExpertWeights w = c.load(arena);
            assertThat(w.scheme().name()).isEqualTo("quark w_int8_per_channel_a_int8_per_tensor_static");
            assertThat(w.scheme().weights()).isEqualTo(WeightFormat.INT8_CHANNEL);
            assertThat(w.scheme().activations()).isEqualTo(ActivationFormat.INT8_STATIC);
            int inter = w.intermediate();
            for (int e : new int[]{1, 6}) {
                for (int r : new int[]{0, inter - 1, inter, 2 * inter - 1}) {
                    Projection p = r < inter ? Projection.GATE : Projection.UP;
                    Tensor wt = c.checkpoint().tensor(c.layer().experts().tensor(e, p, "weight"));
                    Tensor st = c.checkpoint().tensor(c.layer().experts().tensor(e, p, "weight_scale"));
                    float[] row = Dequant.row(w.w13(), e, r);
                    for (int col = 0; col < w.hidden(); col++) {
                        float expect = wt.segment().get(ValueLayout.JAVA_BYTE, (long) (r % inter) * w.hidden() + col)
                                * st.getFloat(r % inter);
                        assertThat(row[col]).isEqualTo(expect);
                    }
                }
            }
            float max2 = 0;
            for (int e = 0; e < 8; e++) {
                max2 = Math.max(max2, c.checkpoint().tensor(c.layer().experts().tensor(e, Projection.DOWN, "input_scale")).getFloat(0));
            }
            var a2 = (ActivationQuant.Int8Static) w.a2();
            assertThat(a2.scale()).containsOnly(max2);
        }
    }

    // ------------------------------------------------------------------------------------------ validation

    static QuarkQuantSpec mxWeight(String dtype) {
        return QuarkQuantSpec.of(dtype, "per_group", 32, "e8m0", false, null);
    }

    static QuarkQuantSpec mxInput(String dtype, boolean dynamic) {
        return QuarkQuantSpec.of(dtype, "per_group", 32, "e8m0", dynamic, null);
    }

    static QuarkQuantSpec fp8Input(boolean dynamic) {
        return QuarkQuantSpec.of("fp8_e4m3", "per_tensor", null, null, dynamic, true);
    }

    @Test
    void mxWeightsMustBePerGroup() {
        assertThatThrownBy(() -> new QuarkOcpMxMethod(QuarkQuantSpec.of("fp4", "per_channel", null, null, false, null), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("For MX(FP4) Fused MoE layers, only per-group scales for weights are supported. Found per_channel.");
    }

    @Test
    void mxWithAnIncompatibleInputDtypeIsRefused() {
        assertThatThrownBy(() -> new QuarkOcpMxMethod(mxWeight("fp4"), QuarkQuantSpec.of("int8", "per_tensor", null, null, false, true)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Current input dtype int8 is not compatible with OCP MX (weight) MoE quantization. Please open an issue");
    }

    @Test
    void mxUnsupportedCombinationIsRefused() {
        assertThatThrownBy(() -> new QuarkOcpMxMethod(mxWeight("fp6_e3m2"), mxInput("fp4", true)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Unsupported OCP MX dtype combination for MoE: input_dtype=mxfp4, weight_dtype=mxfp6_e3m2. "
                        + "Please check that the combination is supported in OCP_MX_Scheme.");
    }

    @Test
    void staticScalesWithMxActivationsAreRefused() {
        assertThatThrownBy(() -> new QuarkOcpMxMethod(mxWeight("fp4"), mxInput("fp4", false)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("QuarkOcpMxMethod with static input scales is currently not implemented for OCP MX scheme "
                        + "w_mxfp4_a_mxfp4. Please open an issue.");
    }

    @Test
    void dynamicFp8WithMxWeightsIsRefused() {
        assertThatThrownBy(() -> new QuarkOcpMxMethod(mxWeight("fp4"), fp8Input(true)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("QuarkOcpMxMethod with dynamic input scales is currently not implemented for OCP MX scheme "
                        + "w_mxfp4_a_fp8. Please open an issue.");
    }

    @ParameterizedTest
    @CsvSource({"fp6_e3m2, quark w_mxfp6_e3m2_a_fp8, MXFP6_E3M2", "fp6_e2m3, quark w_mxfp6_e2m3_a_fp8, MXFP6_E2M3"})
    void mxfp6WeightsWithStaticFp8ActivationsAreSupported(String dtype, String name, WeightFormat wf) {
        var m = new QuarkOcpMxMethod(mxWeight(dtype), fp8Input(false));
        assertThat(m.scheme().name()).isEqualTo(name);
        assertThat(m.scheme().weights()).isEqualTo(wf);
        assertThat(m.scheme().activations()).isEqualTo(ActivationFormat.FP8_STATIC);
    }

    @Test
    void int8WeightsMustBePerTensorOrPerChannel() {
        assertThatThrownBy(() -> new QuarkW8A8Int8Method(QuarkQuantSpec.of("int8", "per_group", 32, null, false, true),
                QuarkQuantSpec.of("int8", "per_tensor", null, null, false, true)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("only per-tensor and per-channel weight scales are supported. Found per_group.");
    }

    @Test
    void int8DynamicPerTokenIsSelectedByTheDispatch() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_quark_int8_per_channel", """
                {"quant_method": "quark", "export": {}, "global_quant_config": {
                 "weight": {"dtype": "int8", "qscheme": "per_channel", "ch_axis": 0, "is_dynamic": false, "symmetric": true},
                 "input_tensors": {"dtype": "int8", "qscheme": "per_channel", "ch_axis": 1, "is_dynamic": true, "symmetric": true}}}""");
        QuantMethod method = QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m));
        assertThat(method.scheme().activations()).isEqualTo(ActivationFormat.INT8_TOKEN);
        try (Checkpoint ckpt = Checkpoint.open(Cases.dir("qwen3_quark_int8_per_channel")); Arena arena = Arena.ofConfined()) {
            ExpertWeights w = method.load(ckpt, QuantizationConfigTest.layer0(m), LoadOptions.ALL, arena);
            assertThat(w.a13()).isInstanceOf(ActivationQuant.Int8PerToken.class);
        }
    }

    @Test
    void quantizedOutputsAreRefused() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_quark_w_mxfp4", """
                {"quant_method": "quark", "export": {}, "global_quant_config": {"weight": {"dtype": "fp4",
                 "qscheme": "per_group", "group_size": 32, "scale_format": "e8m0"},
                 "output_tensors": {"dtype": "fp8_e4m3", "qscheme": "per_tensor"}}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Currently, Quark models with output_tensors and bias quantized are not supported");
    }

    @Test
    void unsupportedQuarkSchemeIsNamed() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_quark_w_mxfp4", """
                {"quant_method": "quark", "export": {}, "global_quant_config": {"weight": {"dtype": "int4",
                 "qscheme": "per_group", "group_size": 128}}}""");
        assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m)))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining("Unsupported FusedMoe scheme").hasMessageContaining("int4");
    }

    @Test
    void layerQuantConfigPatternWinsOverGlobal() throws Exception {
        ModelConfig m = QuantizationConfigTest.withQuantization("qwen3_quark_w_mxfp4", """
                {"quant_method": "quark", "export": {},
                 "layer_quant_config": {"*mlp.experts.*": {"weight": {"dtype": "fp4", "qscheme": "per_group",
                   "group_size": 32, "scale_format": "e8m0"}, "input_tensors": {"dtype": "fp4", "qscheme": "per_group",
                   "group_size": 32, "scale_format": "e8m0", "is_dynamic": true}}},
                 "global_quant_config": {"weight": {"dtype": "int8", "qscheme": "per_tensor", "symmetric": true}}}""");
        assertThat(QuantizationConfig.of(m).methodFor(QuantizationConfigTest.layer0(m)).scheme().name())
                .isEqualTo("quark w_mxfp4_a_mxfp4");
    }

    // ------------------------------------------------------------------------------------------ tensors

    @Test
    void aMissingTensorIsNamed(@TempDir Path dir) {
        String missing = "model.layers.0.mlp.experts.3.up_proj.weight_scale";
        Map<String, Fixtures.Replacement> r = new HashMap<>();
        r.put(missing, null);
        Path d = Fixtures.copyCase("qwen3_quark_w_mxfp4", dir, r);
        ModelConfig m = ModelConfig.load(d);
        MoeLayerConfig layer = QuantizationConfigTest.layer0(m);
        try (Checkpoint ckpt = Checkpoint.open(d); Arena arena = Arena.ofConfined()) {
            QuantMethod method = QuantizationConfig.of(m).methodFor(layer);
            assertThatThrownBy(() -> method.load(ckpt, layer, LoadOptions.ALL, arena))
                    .isInstanceOf(MoeException.class)
                    .hasMessageContaining("'" + missing + "'").hasMessageContaining("missing");
        }
    }

    @Test
    void aMisShapedTensorIsNamed(@TempDir Path dir) {
        String bad = "model.layers.0.mlp.experts.2.down_proj.weight";
        Map<String, Fixtures.Replacement> r = new HashMap<>();
        r.put(bad, new Fixtures.Replacement(DType.U8, new long[]{128, 16}, new byte[128 * 16]));
        Path d = Fixtures.copyCase("qwen3_quark_w_mxfp4", dir, r);
        ModelConfig m = ModelConfig.load(d);
        MoeLayerConfig layer = QuantizationConfigTest.layer0(m);
        try (Checkpoint ckpt = Checkpoint.open(d); Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(layer).load(ckpt, layer, LoadOptions.ALL, arena))
                    .isInstanceOf(MoeException.class)
                    .hasMessageContaining("'" + bad + "'").hasMessageContaining("expected shape [128, 32] but found [128, 16]");
        }
    }

    @Test
    void aMissingStaticInputScaleGivesTheSeedsMessage(@TempDir Path dir) {
        String missing = "model.layers.0.mlp.experts.5.down_proj.input_scale";
        Map<String, Fixtures.Replacement> r = new HashMap<>();
        r.put(missing, null);
        Path d = Fixtures.copyCase("qwen3_quark_w_mxfp4_a_fp8", dir, r);
        ModelConfig m = ModelConfig.load(d);
        MoeLayerConfig layer = QuantizationConfigTest.layer0(m);
        try (Checkpoint ckpt = Checkpoint.open(d); Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(layer).load(ckpt, layer, LoadOptions.ALL, arena))
                    .isInstanceOf(MoeException.class)
                    .hasMessageStartingWith("QuantConfig has static quantization, but found activation scales are None")
                    .hasMessageContaining(missing);
        }
    }

    @Test
    void nonZeroInt8ZeroPointsAreRefused(@TempDir Path dir) {
        String zp = "model.layers.0.mlp.experts.0.gate_proj.weight_zero_point";
        byte[] data = new byte[64];
        data[7] = 3;
        Map<String, Fixtures.Replacement> r = new HashMap<>();
        r.put(zp, new Fixtures.Replacement(DType.I8, new long[]{64}, data));
        Path d = Fixtures.copyCase("qwen3_quark_int8_per_channel", dir, r);
        ModelConfig m = ModelConfig.load(d);
        MoeLayerConfig layer = QuantizationConfigTest.layer0(m);
        try (Checkpoint ckpt = Checkpoint.open(d); Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> QuantizationConfig.of(m).methodFor(layer).load(ckpt, layer, LoadOptions.ALL, arena))
                    .isInstanceOf(MoeException.class).hasMessageContaining(zp).hasMessageContaining("asymmetric");
        }
    }
}
