package io.moe4j.quant.method;

import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A compressed-tensors {@code pack-quantized} weight-only linear (W4A16 / W8A16, per channel or per group of input
 * features): the words of {@code weight_packed} unpacked once into INT4 / INT8 codes ({@link PackQuantized}), the
 * {@code weight_scale} [out, groups] as float32, the zero points when asymmetric, and the act-order
 * {@code weight_g_idx} when the checkpoint has one (it decides each column's group). Built by
 * {@link CtWNA16Method#linear()}, which validates the scheme.
 */
public final class PackedIntLinear implements LinearMethod {
    private final QuantScheme scheme;
    private final int bits;
    /** Columns per group, or 0 per channel. */
    private final int groupSize;
    private final boolean symmetric;
    private final boolean actOrder;

    PackedIntLinear(QuantScheme scheme, int bits, int groupSize, boolean symmetric, boolean actOrder) {
        this.scheme = scheme;
        this.bits = bits;
        this.groupSize = groupSize;
        this.symmetric = symmetric;
        this.actOrder = actOrder;
    }

    @Override
    public QuantScheme scheme() {
        return scheme;
    }

    @Override
    public LinearWeights load(Checkpoint checkpoint, String module, int outFeatures, int inFeatures, Arena arena) {
        CodeType codeType = PackQuantized.codeType(bits);
        if (bits == 4 && inFeatures % 2 != 0) {
            throw new io.moe4j.MoeException(module + ": int4 weights need an even input size; found " + inFeatures);
        }
        int blockCols = groupSize == 0 ? inFeatures : groupSize;
        int groups = (int) TensorChecks.ceilDiv(inFeatures, blockCols);
        Tensor packed = PackQuantized.checkPacked(LinearTensors.tensor(checkpoint, module, "weight_packed"),
                outFeatures, inFeatures, bits);
        LinearTensors.find(checkpoint, module, "weight_shape")
                .ifPresent(t -> PackQuantized.checkShape(t, outFeatures, inFeatures));
        Tensor scale = LinearTensors.expectTensor(checkpoint, module, "weight_scale", new long[]{outFeatures, groups},
                LinearTensors.FLOATS);
        MemorySegment codes = arena.allocate(codeType.rowBytes(inFeatures) * outFeatures, TensorCopies.ALIGN);
        PackQuantized.unpack(packed, outFeatures, inFeatures, bits, codes, 0);
        MemorySegment zeros = null;
        if (!symmetric) {
            zeros = arena.allocate((long) outFeatures * groups);
            PackQuantized.zeroPoints(LinearTensors.tensor(checkpoint, module, "weight_zero_point"), outFeatures, groups,
                    bits, zeros, 0);
        }
        var gIdx = actOrder ? java.util.Optional.of(LinearTensors.tensor(checkpoint, module, "weight_g_idx"))
                : LinearTensors.find(checkpoint, module, "weight_g_idx");
        int[][] groupIndex = gIdx.map(t -> new int[][]{PackQuantized.groupIndex(t, inFeatures, groups)}).orElse(null);
        ExpertMatrix m = new ExpertMatrix(1, outFeatures, inFeatures, codeType, codes,
                new BlockScales(ScaleType.F32, LinearTensors.f32(scale, arena), 1, blockCols, outFeatures, groups),
                zeros, null, 0, groupIndex);
        return new LinearWeights(groupIndex == null || scheme.actOrder() ? scheme
                : new QuantScheme(scheme.name() + " act-order", scheme.weights(), scheme.activations(), true),
                m, ActivationQuant.NONE);
    }
}
