package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ExpectedTensor;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.LoadOptions;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * Unquantized experts (vLLM's UnquantizedFusedMoEMethod): bf16, f16 or f32 weights, kept in the dtype the tensors
 * have. Per-expert families are fused into w13 [E, 2I, H] (gate rows then up rows) and w2 [E, H, I] by copying into
 * the arena. Fused families store {@code gate_up_proj} [E, H, 2I] and {@code down_proj} [E, I, H] transposed (input
 * features first): they are transposed once here into the canonical [rows = out, cols = in] layout, codes unchanged.
 * gpt-oss interleaves gate and up along the last axis, so its w13 rows stay interleaved
 * ({@link io.moe4j.activation.GateLayout#INTERLEAVED}); Llama-4 has gate in the first I columns, up in the second.
 */
public final class UnquantizedMethod implements QuantMethod {
    private static final DType[] FLOATS = {DType.BF16, DType.F16, DType.F32};

    private final WeightFormat declared;

    /** @param declared the dtype the model config declares (torch_dtype); the tensors decide at load */
    public UnquantizedMethod(WeightFormat declared) {
        if (!declared.unquantized()) {
            throw new IllegalArgumentException(declared + " is not an unquantized weight format");
        }
        this.declared = declared;
    }

    @Override
    public QuantScheme scheme() {
        return QuantScheme.unquantized(declared);
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        DType d = FloatDtypes.dtype(declared);
        int e = layer.numExperts();
        int h = layer.hidden();
        int i = layer.intermediate();
        int r13 = ExpertShapes.w13Rows(layer);
        if (layer.experts().fused()) {
            List<ExpectedTensor> out = new ArrayList<>();
            out.add(new ExpectedTensor(layer.experts().fusedTensor("gate_up_proj"), d,
                    layer.fusedTransposed() ? new long[]{e, h, r13} : new long[]{e, r13, h}));
            out.add(new ExpectedTensor(layer.experts().fusedTensor("down_proj"), d,
                    layer.fusedTransposed() ? new long[]{e, i, h} : new long[]{e, h, i}));
            if (layer.hasExpertBias()) {
                out.add(new ExpectedTensor(layer.experts().fusedTensor("gate_up_proj_bias"), d, new long[]{e, r13}));
                out.add(new ExpectedTensor(layer.experts().fusedTensor("down_proj_bias"), d, new long[]{e, h}));
            }
            return out;
        }
        return ExpertShapes.expected(layer, ExpertShapes.all(layer), "weight", d,
                p -> new long[]{ExpertShapes.rows(layer, p), ExpertShapes.cols(layer, p)});
    }

    @Override
    public ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena) {
        int[] ids = ExpertSelection.localIds(layer, options);
        int[] map = ExpertSelection.expertMap(layer, options, ids);
        var progress = new LoadProgress(options);
        int h = layer.hidden();
        int i = layer.intermediate();
        int r13 = ExpertShapes.w13Rows(layer);
        ExpertMatrix w13;
        ExpertMatrix w2;
        float[] b13 = null;
        float[] b2 = null;
        if (layer.experts().fused()) {
            Tensor gateUp = checkpoint.tensor(layer.experts().fusedTensor("gate_up_proj"));
            Tensor down = checkpoint.tensor(layer.experts().fusedTensor("down_proj"));
            long e = layer.numExperts();
            if (layer.fusedTransposed()) {
                expect(gateUp, new long[]{e, h, r13}, FLOATS);
                expect(down, new long[]{e, i, h}, FLOATS);
                w13 = ExpertMatrix.dense(ids.length, r13, h, FloatDtypes.codeType(gateUp.dtype()),
                        transpose(gateUp, ids, h, r13, arena, progress));
                w2 = ExpertMatrix.dense(ids.length, h, i, FloatDtypes.codeType(down.dtype()),
                        transpose(down, ids, i, h, arena, progress));
            } else {
                expect(gateUp, new long[]{e, r13, h}, FLOATS);
                expect(down, new long[]{e, h, i}, FLOATS);
                w13 = ExpertMatrix.dense(ids.length, r13, h, FloatDtypes.codeType(gateUp.dtype()),
                        ExpertSelection.selectExperts(gateUp, ids, arena, progress));
                w2 = ExpertMatrix.dense(ids.length, h, i, FloatDtypes.codeType(down.dtype()),
                        ExpertSelection.selectExperts(down, ids, arena, progress));
            }
            if (layer.hasExpertBias()) {
                b13 = ExpertSelection.expertRows(expect(checkpoint.tensor(layer.experts().fusedTensor("gate_up_proj_bias")),
                        new long[]{e, r13}, FLOATS), ids);
                b2 = ExpertSelection.expertRows(expect(checkpoint.tensor(layer.experts().fusedTensor("down_proj_bias")),
                        new long[]{e, h}, FLOATS), ids);
            }
        } else {
            List<Tensor> up = ExpertStacks.perExpert(checkpoint, layer, ids, ExpertShapes.w13Projections(layer), "weight",
                    (t, p) -> expect(t, new long[]{i, h}, FLOATS));
            List<Tensor> down = ExpertStacks.perExpert(checkpoint, layer, ids, List.of(Projection.DOWN), "weight",
                    (t, p) -> expect(t, new long[]{h, i}, FLOATS));
            DType d13 = sameDtype(up);
            DType d2 = sameDtype(down);
            w13 = ExpertMatrix.dense(ids.length, r13, h, FloatDtypes.codeType(d13), TensorCopies.concat(arena, up, progress));
            w2 = ExpertMatrix.dense(ids.length, h, i, FloatDtypes.codeType(d2), TensorCopies.concat(arena, down, progress));
        }
        QuantScheme scheme = QuantScheme.unquantized(FloatDtypes.weightFormat(w13.codes()));
        return new ExpertWeights(scheme, ids.length, h, i, w13, w2, b13, b2, layer.gateLayout(), layer.activation(),
                layer.swigluLimit(), ActivationQuant.NONE, ActivationQuant.NONE, map);
    }

    /** One dtype for tensors that are stacked into one matrix; fails naming the first that differs. */
    static DType sameDtype(List<Tensor> tensors) {
        DType d = tensors.get(0).dtype();
        for (Tensor t : tensors) {
            if (t.dtype() != d) {
                throw new MoeException(t.file() + ": tensor '" + t.name() + "': dtype " + t.dtype() + " differs from "
                        + tensors.get(0).name() + " (" + d + "); the tensors stacked into one expert matrix must share a dtype");
            }
        }
        return d;
    }

    private static final int TILE = 32;

    /**
     * Local experts of a stacked [E, in, out] tensor, transposed to [E, out, in] in the arena; elements are copied
     * bit for bit (2 or 4 bytes), tile by tile so both sides stay in cache.
     */
    static MemorySegment transpose(Tensor stacked, int[] ids, int in, int out, Arena arena, LoadProgress progress) {
        int es = stacked.dtype().byteSize();
        long perExpert = (long) in * out * es;
        MemorySegment src = stacked.segment();
        MemorySegment dst = arena.allocate(perExpert * ids.length, TensorCopies.ALIGN);
        for (int k = 0; k < ids.length; k++) {
            long sBase = ids[k] * perExpert;
            long dBase = k * perExpert;
            for (int c0 = 0; c0 < in; c0 += TILE) {
                int c1 = Math.min(in, c0 + TILE);
                for (int r0 = 0; r0 < out; r0 += TILE) {
                    int r1 = Math.min(out, r0 + TILE);
                    for (int c = c0; c < c1; c++) {
                        long sRow = sBase + (long) c * out * es;
                        for (int r = r0; r < r1; r++) {
                            long s = sRow + (long) r * es;
                            long d = dBase + ((long) r * in + c) * es;
                            if (es == 2) {
                                dst.set(ValueLayout.JAVA_SHORT_UNALIGNED, d, src.get(ValueLayout.JAVA_SHORT_UNALIGNED, s));
                            } else {
                                dst.set(ValueLayout.JAVA_INT_UNALIGNED, d, src.get(ValueLayout.JAVA_INT_UNALIGNED, s));
                            }
                        }
                    }
                }
            }
            progress.add(perExpert);
        }
        return dst;
    }
}
