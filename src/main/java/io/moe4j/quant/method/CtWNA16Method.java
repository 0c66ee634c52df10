package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.BlockScales;
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
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static io.moe4j.quant.method.TensorChecks.ceilDiv;
import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * compressed-tensors {@code pack-quantized} weight-only experts (vLLM's CompressedTensorsWNA16MarlinMoEMethod): int4
 * or int8 weights, per output channel or per group of input features, activations in float.
 *
 * <p>Per expert and projection: {@code weight_packed} I32 [rows, ceil(cols·bits/32)] (32/bits values a word, each
 * stored offset-binary as value + 2^(bits−1), the first in the lowest bits), {@code weight_scale} [rows, groups]
 * (BF16, F16 or F32; [rows, 1] per channel), {@code weight_shape} I64 [2] = [rows, cols], optionally
 * {@code weight_g_idx} I32 [cols] (act-order: the group of each input column) and, for asymmetric checkpoints,
 * {@code weight_zero_point} (I32 packed along rows, [ceil(rows·bits/32), groups], same offset-binary packing; or
 * unpacked I8 / I32 [rows, groups]).
 *
 * <p>Loading unpacks the words into {@link CodeType#INT4} (two's-complement nibbles, even element low) or
 * {@link CodeType#INT8} codes: flipping the top bit of each offset-binary field turns it into two's complement, and
 * compressed-tensors' lowest-bits-first order is already the nibble order. Scales become float32 (exactly). The
 * seed's Marlin repacking and act-order sorting are kernel layouts and are left to backends; the g_idx is kept per
 * expert as the matrix's group index, one per projection where gate and up differ (the seed keeps one w13 g_idx and
 * assumes they agree). Deviation: the seed asserts symmetric weights; moe4j also loads asymmetric
 * checkpoints, keeping the zero points on the scale grid.
 */
public final class CtWNA16Method implements QuantMethod {
    private final int bits;
    private final boolean channel;
    private final Integer groupSize;
    private final boolean actOrder;
    private final boolean symmetric;

    public CtWNA16Method(CtQuantArgs weights) {
        if (!(weights.numBits() == 4 || weights.numBits() == 8)) {
            throw new IllegalArgumentException("Unsupported num_bits = " + weights.numBits()
                    + " for WNA16 MoE layers; supported: [4, 8]");
        }
        if (!weights.isInt()) {
            throw new IllegalArgumentException("WNA16 MoE layers need int weights; found type " + weights.type());
        }
        this.bits = weights.numBits();
        this.channel = CtQuantArgs.CHANNEL.equals(weights.strategy());
        if (!channel && !CtQuantArgs.GROUP.equals(weights.strategy())) {
            throw new IllegalArgumentException("Unsupported strategy " + weights.strategy()
                    + " for WNA16 MoE layers; supported: channel, group");
        }
        if (!channel && (weights.groupSize() == null || weights.groupSize() <= 0)) {
            throw new IllegalArgumentException("WNA16 group strategy needs a positive group_size; found "
                    + weights.groupSize());
        }
        this.groupSize = channel ? null : weights.groupSize();
        this.actOrder = CtQuantArgs.GROUP.equals(weights.actorder());
        this.symmetric = weights.symmetric();
    }

    @Override
    public QuantScheme scheme() {
        WeightFormat wf = bits == 4 ? (channel ? WeightFormat.INT4_CHANNEL : WeightFormat.INT4_GROUP)
                : (channel ? WeightFormat.INT8_CHANNEL : WeightFormat.INT8_GROUP);
        String name = "compressed-tensors W" + bits + "A16 " + (channel ? "channel" : "g" + groupSize)
                + (symmetric ? "" : " asymmetric") + (actOrder ? " act-order" : "");
        return new QuantScheme(name, wf, ActivationFormat.NONE, actOrder);
    }

    /** The same scheme for a dense linear module. */
    public LinearMethod linear() {
        return new PackedIntLinear(scheme(), bits, channel ? 0 : groupSize, symmetric, actOrder);
    }

    private int groups(int cols) {
        return channel ? 1 : (int) ceilDiv(cols, groupSize);
    }

    private int perWord() {
        return 32 / bits;
    }

    @Override
    public List<ExpectedTensor> expectedTensors(MoeLayerConfig layer) {
        List<Projection> all = ExpertShapes.all(layer);
        List<ExpectedTensor> out = new ArrayList<>(ExpertShapes.expected(layer, all, "weight_packed", DType.I32,
                p -> new long[]{ExpertShapes.rows(layer, p), ceilDiv(ExpertShapes.cols(layer, p), perWord())}));
        out.addAll(ExpertShapes.expected(layer, all, "weight_scale", DType.BF16,
                p -> new long[]{ExpertShapes.rows(layer, p), groups(ExpertShapes.cols(layer, p))}));
        out.addAll(ExpertShapes.expected(layer, all, "weight_shape", DType.I64, p -> new long[]{2}));
        if (actOrder) {
            out.addAll(ExpertShapes.expected(layer, all, "weight_g_idx", DType.I32,
                    p -> new long[]{ExpertShapes.cols(layer, p)}));
        }
        if (!symmetric) {
            out.addAll(ExpertShapes.expected(layer, all, "weight_zero_point", DType.I32,
                    p -> new long[]{ceilDiv(ExpertShapes.rows(layer, p), perWord()), groups(ExpertShapes.cols(layer, p))}));
        }
        return out;
    }

    @Override
    public ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena) {
        ExpertLoad load = ExpertLoad.perExpert(checkpoint, layer, options, arena, scheme().name());
        int[] ids = load.ids();
        var progress = load.progress();
        ExpertMatrix w13 = stack(checkpoint, layer, ids, load.w13(), arena, progress);
        ExpertMatrix w2 = stack(checkpoint, layer, ids, ExpertLoad.W2, arena, progress);
        return load.unbiased(scheme(), w13, w2, ActivationQuant.NONE, ActivationQuant.NONE);
    }

    private ExpertMatrix stack(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                               Arena arena, LoadProgress progress) {
        Projection p0 = projections.get(0);
        int rows = ExpertShapes.rows(layer, p0);
        int cols = ExpertShapes.cols(layer, p0);
        int groups = groups(cols);
        int total = rows * projections.size();
        CodeType codeType = bits == 4 ? CodeType.INT4 : CodeType.INT8;
        if (bits == 4 && cols % 2 != 0) {
            throw new MoeException("layer " + layer.layer() + ": int4 weights need an even input size; found " + cols);
        }
        List<Tensor> packed = ExpertStacks.perExpert(ckpt, layer, ids, projections, "weight_packed",
                (t, p) -> PackQuantized.checkPacked(t, rows, cols, bits));
        List<Tensor> scales = ExpertStacks.perExpert(ckpt, layer, ids, projections, "weight_scale",
                (t, p) -> expect(t, new long[]{rows, groups}, DType.BF16, DType.F16, DType.F32));
        for (int id : ids) {
            for (Projection p : projections) {
                ckpt.find(ExpertShapes.name(layer, id, p, "weight_shape")).ifPresent(t -> PackQuantized.checkShape(t, rows, cols));
            }
        }
        long rowBytes = codeType.rowBytes(cols);
        MemorySegment codes = arena.allocate(rowBytes * total * ids.length, TensorCopies.ALIGN);
        long at = 0;
        for (Tensor t : packed) {
            PackQuantized.unpack(t, rows, cols, bits, codes, at);
            at += rows * rowBytes;
            progress.add(t.segment().byteSize());
        }
        BlockScales bs = new BlockScales(ScaleType.F32, TensorCopies.toF32(arena, scales, progress), 1,
                channel ? cols : groupSize, total, groups);
        MemorySegment zeroPoints = symmetric ? null : zeroPoints(ckpt, layer, ids, projections, rows, groups, arena);
        int[][] gIdx = actOrder ? groupIndex(ckpt, layer, ids, projections, cols, groups) : null;
        return new ExpertMatrix(ids.length, total, cols, codeType, codes, bs, zeroPoints, null, 0, gIdx);
    }

    /** Zero points on the scale grid: one signed byte per (row, group), stacked like the scales. */
    private MemorySegment zeroPoints(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                                     int rows, int groups, Arena arena) {
        MemorySegment out = arena.allocate((long) ids.length * projections.size() * rows * groups);
        long at = 0;
        for (int id : ids) {
            for (Projection p : projections) {
                PackQuantized.zeroPoints(ckpt.tensor(ExpertShapes.name(layer, id, p, "weight_zero_point")), rows,
                        groups, bits, out, at);
                at += (long) rows * groups;
            }
        }
        return out;
    }

    /**
     * Act-order group of each input column, per local expert. GPTQ quantizes each projection on its own, so the
     * gate and up halves of w13 may order their columns differently: then every expert keeps one map per projection
     * ({@link ExpertMatrix#groupParts()} = 2), else one map per expert, which keeps the backends' one-GEMM path.
     */
    private static int[][] groupIndex(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                                      int cols, int groups) {
        int parts = projections.size();
        int[][] perPart = new int[ids.length * parts][];
        boolean shared = true;
        for (int k = 0; k < ids.length; k++) {
            for (int p = 0; p < parts; p++) {
                Tensor t = ckpt.tensor(ExpertShapes.name(layer, ids[k], projections.get(p), "weight_g_idx"));
                int[] g = PackQuantized.groupIndex(t, cols, groups);
                perPart[k * parts + p] = g;
                shared &= Arrays.equals(perPart[k * parts], g);
            }
        }
        if (!shared) {
            return perPart;
        }
        int[][] out = new int[ids.length][];
        for (int k = 0; k < ids.length; k++) {
            out[k] = perPart[k * parts];
        }
        return out;
    }
}
