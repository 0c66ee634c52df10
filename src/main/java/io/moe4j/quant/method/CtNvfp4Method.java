package io.moe4j.quant.method;

import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpectedTensor;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
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
 * compressed-tensors NVFP4 experts (vLLM's CompressedTensorsW4A4Nvfp4MoEMethod, W4A4 and W4A16). Per expert and
 * projection: {@code weight_packed} U8 [rows, cols/2] (two E2M1 codes a byte, even element in the low nibble),
 * {@code weight_scale} F8_E4M3 [rows, cols/16], {@code weight_global_scale} F32 [1], and for W4A4
 * {@code input_global_scale} F32 [1]. A global scale g is a quantize multiplier: a weight is e2m1 · s8 / g.
 *
 * <p>Global scales are kept exactly per shard: w13 gets two shard scales per expert (1/g of gate, 1/g of up) and w2
 * one. The seed instead uses the gate's global scale for the whole of w13 (its kernels take one per expert) and only
 * warns when up's differs, which changes the up half's values; moe4j honours both. Activations (W4A4): NVFP4 qdq
 * with the stored input_global_scale as g, per local expert; when gate's and up's input global scales differ the
 * smaller one (the larger dequantization scale 1/g, as the seed's max over a13 scales) is used, with a warning.
 */
public final class CtNvfp4Method implements QuantMethod {
    static final int GROUP = 16;

    private final boolean weightOnly;

    /** @param weightOnly W4A16 (no input_activations); else W4A4 */
    public CtNvfp4Method(boolean weightOnly) {
        this.weightOnly = weightOnly;
    }

    @Override
    public QuantScheme scheme() {
        return new QuantScheme("compressed-tensors " + (weightOnly ? "W4A16" : "W4A4") + " NVFP4", WeightFormat.NVFP4,
                weightOnly ? ActivationFormat.NONE : ActivationFormat.NVFP4, false);
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        List<Projection> all = ExpertShapes.all(layer);
        List<ExpectedTensor> out = new ArrayList<>(ExpertShapes.expected(layer, all, "weight_packed", DType.U8,
                p -> new long[]{ExpertShapes.rows(layer, p), ExpertShapes.cols(layer, p) / 2}));
        out.addAll(ExpertShapes.expected(layer, all, "weight_scale", DType.F8_E4M3,
                p -> new long[]{ExpertShapes.rows(layer, p), ExpertShapes.cols(layer, p) / GROUP}));
        out.addAll(ExpertShapes.expected(layer, all, "weight_global_scale", DType.F32, p -> new long[]{1}));
        if (!weightOnly) {
            out.addAll(ExpertShapes.expected(layer, all, "input_global_scale", DType.F32, p -> new long[]{1}));
        }
        return out;
    }

    @Override
    public ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena) {
        ExpertLoad load = ExpertLoad.perExpert(checkpoint, layer, options, arena, scheme().name());
        int[] ids = load.ids();
        var progress = load.progress();
        List<Projection> p13 = load.w13();
        List<Projection> p2 = ExpertLoad.W2;
        DType[] e4m3 = {DType.F8_E4M3};
        ExpertMatrix w13 = ExpertStacks.stackPackedWithByteScales(checkpoint, layer, ids, p13, CodeType.FP4_E2M1,
                "weight_packed", ScaleType.E4M3, "weight_scale", e4m3, GROUP,
                inverse(globalScales(checkpoint, layer, ids, p13, "weight_global_scale")), layer.intermediate(), arena, progress);
        ExpertMatrix w2 = ExpertStacks.stackPackedWithByteScales(checkpoint, layer, ids, p2, CodeType.FP4_E2M1,
                "weight_packed", ScaleType.E4M3, "weight_scale", e4m3, GROUP,
                inverse(globalScales(checkpoint, layer, ids, p2, "weight_global_scale")), layer.hidden(), arena, progress);
        ActivationQuant a13 = ActivationQuant.NONE;
        ActivationQuant a2 = ActivationQuant.NONE;
        if (!weightOnly) {
            a13 = new ActivationQuant.Nvfp4(inputGlobalScales(checkpoint, layer, ids, p13));
            a2 = new ActivationQuant.Nvfp4(inputGlobalScales(checkpoint, layer, ids, p2));
        }
        return load.unbiased(scheme(), w13, w2, a13, a2);
    }

    /** One global scale per (local expert, projection), flattened in that order (the shard order of the stack). */
    private static float[] globalScales(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                                        String suffix) {
        float[] out = new float[ids.length * projections.size()];
        int k = 0;
        for (int id : ids) {
            for (Projection p : projections) {
                out[k++] = TensorChecks.scalar(ckpt.tensor(ExpertShapes.name(layer, id, p, suffix)));
            }
        }
        return out;
    }

    private static float[] inverse(float[] g) {
        float[] out = new float[g.length];
        for (int i = 0; i < g.length; i++) {
            out[i] = 1f / g[i];
        }
        return out;
    }

    /** Per local expert: the input global scale of its GEMM (the smaller of gate's and up's for w13). */
    private static float[] inputGlobalScales(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections) {
        float[] all = globalScales(ckpt, layer, ids, projections, "input_global_scale");
        int per = projections.size();
        float[] out = new float[ids.length];
        boolean differ = false;
        for (int k = 0; k < ids.length; k++) {
            float g = all[k * per];
            for (int j = 1; j < per; j++) {
                differ |= all[k * per + j] != g;
                g = Math.min(g, all[k * per + j]);
            }
            out[k] = g;
        }
        if (differ) {
            PostLoadRules.LOG.log(System.Logger.Level.WARNING, "layer " + layer.layer() + ": gate and up "
                    + "input_global_scale differ; using the smaller (the larger activation scale) for w13's input");
        }
        return out;
    }
}
