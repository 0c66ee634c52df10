package io.moe4j.quant.method;

import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
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
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsException;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * Quark W8A8 INT8 experts (vLLM's QuarkW8A8Int8MoEMethod): symmetric int8 weights with a per-tensor or per-channel
 * float32 scale, and int8 activations with a static per-tensor scale or a dynamic per-token one.
 *
 * <p>Per expert and projection: {@code weight} I8 [rows, cols]; {@code weight_scale} F32 [rows] (per_channel) or a
 * scalar (per_tensor); {@code weight_zero_point} I8 of the same shape (optional); for static input
 * {@code input_scale} F32 and {@code input_zero_point} I8 scalars.
 *
 * <p>Post-load rules: static input scales collapse to their maximum over experts (and gate/up), with the seed's
 * warning when they differ. The seed also merges the gate and up per-tensor weight scales into their max and
 * requantizes one of the halves; moe4j keeps both exactly as separate shard scales instead (no requantization
 * error). The seed discards zero points because its kernel is symmetric; moe4j checks they are zero and refuses a
 * checkpoint whose zero points are not, rather than silently computing something else.
 */
public final class QuarkW8A8Int8Method implements QuantMethod {
    private final boolean perChannel;
    private final boolean staticInputScales;

    public QuarkW8A8Int8Method(QuarkQuantSpec weight, QuarkQuantSpec input) {
        String qscheme = weight.qscheme() == null ? "per_tensor" : weight.qscheme();
        if (!qscheme.equals("per_tensor") && !qscheme.equals("per_channel")) {
            throw new IllegalArgumentException("For INT8 Fused MoE layers, only per-tensor and per-channel weight scales "
                    + "are supported. Found " + qscheme + ".");
        }
        if (input == null) {
            throw new IllegalArgumentException("QuarkW8A8Int8Method needs an input_tensors spec (W8A8)");
        }
        this.perChannel = qscheme.equals("per_channel");
        this.staticInputScales = !input.dynamic();
    }

    @Override
    public QuantScheme scheme() {
        return new QuantScheme("quark w_int8_" + (perChannel ? "per_channel" : "per_tensor") + "_a_int8_"
                + (staticInputScales ? "per_tensor_static" : "per_token_dynamic"),
                perChannel ? WeightFormat.INT8_CHANNEL : WeightFormat.INT8_TENSOR,
                staticInputScales ? ActivationFormat.INT8_STATIC : ActivationFormat.INT8_TOKEN, false);
    }

    /** The same scheme for a dense linear module. */
    public LinearMethod linear() {
        return new Int8Linear("quark", perChannel, staticInputScales);
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        List<Projection> all = ExpertShapes.all(layer);
        List<ExpectedTensor> out = new ArrayList<>(ExpertShapes.expected(layer, all, "weight", DType.I8,
                p -> new long[]{ExpertShapes.rows(layer, p), ExpertShapes.cols(layer, p)}));
        out.addAll(ExpertShapes.expected(layer, all, "weight_scale", DType.F32,
                p -> perChannel ? new long[]{ExpertShapes.rows(layer, p)} : new long[0]));
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
        List<Projection> p13 = load.w13();
        ExpertMatrix w13 = stack(checkpoint, layer, ids, p13, arena, progress);
        ExpertMatrix w2 = stack(checkpoint, layer, ids, ExpertLoad.W2, arena, progress);
        ActivationQuant a13;
        ActivationQuant a2;
        if (staticInputScales) {
            requireZeroInputZeroPoints(checkpoint, layer, ids);
            a13 = new ActivationQuant.Int8Static(PostLoadRules.collapseToMax(
                    PostLoadRules.staticScales(checkpoint, layer, ids, p13, "input_scale"), "INT8"), null);
            a2 = new ActivationQuant.Int8Static(PostLoadRules.collapseToMax(
                    PostLoadRules.staticScales(checkpoint, layer, ids, ExpertLoad.W2, "input_scale"), "INT8"), null);
        } else {
            a13 = new ActivationQuant.Int8PerToken();
            a2 = new ActivationQuant.Int8PerToken();
        }
        return load.unbiased(scheme(), w13, w2, a13, a2);
    }

    private ExpertMatrix stack(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                               Arena arena, LoadProgress progress) {
        Projection p0 = projections.get(0);
        int rows = ExpertShapes.rows(layer, p0);
        int cols = ExpertShapes.cols(layer, p0);
        int total = rows * projections.size();
        List<Tensor> codes = ExpertStacks.perExpert(ckpt, layer, ids, projections, "weight",
                (t, p) -> expect(t, new long[]{rows, cols}, DType.I8));
        List<Tensor> scales = ExpertStacks.perExpert(ckpt, layer, ids, projections, "weight_scale",
                (t, p) -> perChannel ? perChannelScale(t, rows) : t);
        for (int k = 0; k < ids.length; k++) {
            for (Projection p : projections) {
                ckpt.find(ExpertShapes.name(layer, ids[k], p, "weight_zero_point")).ifPresent(QuarkW8A8Int8Method::requireZero);
            }
        }
        var data = TensorCopies.concat(arena, codes, progress);
        return perChannel
                ? ExpertStacks.perChannelScaled(ids.length, total, cols, CodeType.INT8, data, scales, arena, progress)
                : ExpertStacks.perTensorScaled(ids.length, total, rows, cols, CodeType.INT8, data, scales);
    }

    /** Quark writes per-channel scales 1-D ([rows]); [rows, 1] is accepted too. */
    private static Tensor perChannelScale(Tensor t, int rows) {
        if (t.shape().length == 2) {
            return expect(t, new long[]{rows, 1}, DType.F32, DType.BF16, DType.F16);
        }
        return expect(t, new long[]{rows}, DType.F32, DType.BF16, DType.F16);
    }

    private static void requireZero(Tensor zp) {
        for (int v : zp.toIntArray()) {
            if (v != 0) {
                throw new SafetensorsException(zp.file(), zp.name(), "zero point " + v + " is not 0: asymmetric INT8 "
                        + "quantization is not supported for MoE layers (the INT8 fused MoE method is symmetric)");
            }
        }
    }

    private static void requireZeroInputZeroPoints(Checkpoint ckpt, MoeLayerConfig layer, int[] ids) {
        for (int id : ids) {
            for (Projection p : ExpertShapes.all(layer)) {
                Optional<Tensor> t = ckpt.find(ExpertShapes.name(layer, id, p, "input_zero_point"));
                t.ifPresent(QuarkW8A8Int8Method::requireZero);
            }
        }
    }
}
