package io.moe4j.quant.method;

import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.format.ElementFormat;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpectedTensor;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LoadOptions;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

/**
 * Quark OCP MX experts (vLLM's QuarkOCP_MX_MoEMethod): MXFP4, MXFP6 E3M2 or MXFP6 E2M3 weights with E8M0 scales per
 * 32 input features, and activations left in float, quantize-dequantized to an MX format per 32 channels
 * (dynamic), or to FP8 E4M3 with a static per-tensor scale. Every OCP_MX_Scheme combination is accepted:
 * w_mxfp4[_a_mxfp4 | _a_mxfp6_e3m2 | _a_mxfp6_e2m3 | _a_fp8], w_mxfp6_e3m2[_a_mxfp6_e3m2 | _a_fp8],
 * w_mxfp6_e2m3[_a_mxfp6_e2m3 | _a_fp8].
 *
 * <p>Per expert and projection the checkpoint holds {@code weight} U8 (fp4: [rows, cols/2], two codes a byte with
 * the even element in the low nibble; fp6: [rows, cols·3/4], four codes in three bytes), {@code weight_scale} U8 E8M0
 * [rows, cols/32], and for a_fp8 {@code input_scale} F32 (a scalar). Codes and scales are stacked as they are.
 */
public final class QuarkOcpMxMethod implements QuantMethod {
    static final int BLOCK = 32;

    private final String weightDtype;
    private final String inputDtype;
    private final String ocpMxScheme;
    private final boolean staticInputScales;

    public QuarkOcpMxMethod(QuarkQuantSpec weight, QuarkQuantSpec input) {
        String qscheme = weight.qscheme();
        if (!"per_group".equals(qscheme)) {
            throw new IllegalArgumentException("For MX(FP4) Fused MoE layers, only per-group scales for weights are "
                    + "supported. Found " + qscheme + ".");
        }
        this.weightDtype = weight.dtype() == null ? null : weight.dtype().replace("fp", "mxfp");
        if (input != null) {
            String in = input.dtype();
            if ("fp4".equals(in) || "fp6_e3m2".equals(in) || "fp6_e2m3".equals(in)) {
                this.inputDtype = in.replace("fp", "mxfp");
            } else if ("fp8_e4m3".equals(in)) {
                this.inputDtype = "fp8";
            } else {
                throw new IllegalArgumentException("Current input dtype " + in + " is not compatible with OCP MX (weight) "
                        + "MoE quantization. Please open an issue");
            }
        } else {
            this.inputDtype = null;
        }
        this.ocpMxScheme = ocpMxScheme(inputDtype, weightDtype);
        if (ocpMxScheme == null) {
            throw new IllegalArgumentException("Unsupported OCP MX dtype combination for MoE: input_dtype=" + inputDtype
                    + ", weight_dtype=" + weightDtype + ". Please check that the combination is supported in OCP_MX_Scheme.");
        }
        this.staticInputScales = input != null && !input.dynamic();
        boolean mxActivations = ocpMxScheme.endsWith("a_mxfp4") || ocpMxScheme.endsWith("a_mxfp6_e3m2")
                || ocpMxScheme.endsWith("a_mxfp6_e2m3");
        if (mxActivations && staticInputScales) {
            throw new IllegalArgumentException("QuarkOcpMxMethod with static input scales is currently not implemented "
                    + "for OCP MX scheme " + ocpMxScheme + ". Please open an issue.");
        }
        if (ocpMxScheme.endsWith("a_fp8") && !staticInputScales) {
            throw new IllegalArgumentException("QuarkOcpMxMethod with dynamic input scales is currently not implemented "
                    + "for OCP MX scheme " + ocpMxScheme + ". Please open an issue.");
        }
        // The seed refuses w_mxfp6_e3m2_a_fp8 and w_mxfp6_e2m3_a_fp8 at kernel-config time only because vLLM has no
        // fused kernel config for them; the numerics (MXFP6 weights, static FP8 activation qdq) are as well defined
        // as w_mxfp4_a_fp8's, so moe4j supports them.
    }

    /** OCP_MX_Scheme.from_quant_dtype: the scheme name, or null for an unsupported combination. */
    static String ocpMxScheme(String input, String weight) {
        if (weight == null) {
            return null;
        }
        List<String> inputs = switch (weight) {
            case "mxfp4" -> List.of("mxfp4", "mxfp6_e3m2", "mxfp6_e2m3", "fp8");
            case "mxfp6_e3m2" -> List.of("mxfp6_e3m2", "fp8");
            case "mxfp6_e2m3" -> List.of("mxfp6_e2m3", "fp8");
            default -> null;
        };
        if (inputs == null) {
            return null;
        }
        if (input == null) {
            return "w_" + weight;
        }
        return inputs.contains(input) ? "w_" + weight + "_a_" + input : null;
    }

    public String ocpMxScheme() {
        return ocpMxScheme;
    }

    /** The same scheme for a dense linear module (one matrix, its own input scale). */
    public LinearMethod linear() {
        ElementFormat in = inputDtype == null || inputDtype.equals("fp8") ? null : element(inputDtype);
        return new OcpMxLinear(scheme(), codes(), in);
    }

    private CodeType codes() {
        return switch (weightDtype) {
            case "mxfp4" -> CodeType.FP4_E2M1;
            case "mxfp6_e3m2" -> CodeType.FP6_E3M2;
            default -> CodeType.FP6_E2M3;
        };
    }

    private WeightFormat weightFormat() {
        return switch (weightDtype) {
            case "mxfp4" -> WeightFormat.MXFP4;
            case "mxfp6_e3m2" -> WeightFormat.MXFP6_E3M2;
            default -> WeightFormat.MXFP6_E2M3;
        };
    }

    private static ElementFormat element(String mx) {
        return switch (mx) {
            case "mxfp4" -> ElementFormat.E2M1;
            case "mxfp6_e3m2" -> ElementFormat.E3M2;
            default -> ElementFormat.E2M3;
        };
    }

    private ActivationFormat activationFormat() {
        if (inputDtype == null) {
            return ActivationFormat.NONE;
        }
        return switch (inputDtype) {
            case "mxfp4" -> ActivationFormat.MXFP4;
            case "mxfp6_e3m2" -> ActivationFormat.MXFP6_E3M2;
            case "mxfp6_e2m3" -> ActivationFormat.MXFP6_E2M3;
            default -> ActivationFormat.FP8_STATIC;
        };
    }

    @Override
    public QuantScheme scheme() {
        return new QuantScheme("quark " + ocpMxScheme, weightFormat(), activationFormat(), false);
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        CodeType c = codes();
        List<Projection> all = ExpertShapes.all(layer);
        List<ExpectedTensor> out = new ArrayList<>(ExpertShapes.expected(layer, all, "weight", DType.U8,
                p -> new long[]{ExpertShapes.rows(layer, p), c.rowBytes(ExpertShapes.cols(layer, p))}));
        out.addAll(ExpertShapes.expected(layer, all, "weight_scale", DType.U8,
                p -> new long[]{ExpertShapes.rows(layer, p), ExpertShapes.cols(layer, p) / BLOCK}));
        if (staticInputScales) {
            out.addAll(ExpertShapes.expected(layer, all, "input_scale", DType.F32, p -> new long[0]));
        }
        return out;
    }

    @Override
    public ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena) {
        ExpertLoad load = ExpertLoad.perExpert(checkpoint, layer, options, arena, scheme().name());
        int[] ids = load.ids();
        var progress = load.progress();
        DType[] scaleDtypes = {DType.U8, DType.F8_E8M0};
        List<Projection> p13 = load.w13();
        ExpertMatrix w13 = ExpertStacks.stackPackedWithByteScales(checkpoint, layer, ids, p13, codes(), "weight",
                ScaleType.E8M0, "weight_scale", scaleDtypes, BLOCK, null, 0, arena, progress);
        ExpertMatrix w2 = ExpertStacks.stackPackedWithByteScales(checkpoint, layer, ids, ExpertLoad.W2, codes(),
                "weight", ScaleType.E8M0, "weight_scale", scaleDtypes, BLOCK, null, 0, arena, progress);
        ActivationQuant a13;
        ActivationQuant a2;
        if (inputDtype == null) {
            a13 = ActivationQuant.NONE;
            a2 = ActivationQuant.NONE;
        } else if (inputDtype.equals("fp8")) {
            // Post-load rule: one static scale per GEMM input, the max over experts (and gate/up), with a warning.
            a13 = new ActivationQuant.Fp8Static(PostLoadRules.collapseToMax(
                    PostLoadRules.staticScales(checkpoint, layer, ids, p13, "input_scale"), "fp8"));
            a2 = new ActivationQuant.Fp8Static(PostLoadRules.collapseToMax(
                    PostLoadRules.staticScales(checkpoint, layer, ids, ExpertLoad.W2, "input_scale"), "fp8"));
        } else {
            a13 = new ActivationQuant.Mx(element(inputDtype));
            a2 = new ActivationQuant.Mx(element(inputDtype));
        }
        return load.unbiased(scheme(), w13, w2, a13, a2);
    }
}
