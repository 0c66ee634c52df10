package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A compressed-tensors {@code int-quantized} W4A8 linear: {@code weight} I8 [out, in] holding int4 values, packed
 * once into nibbles ({@link Int4Values}), a {@code weight_scale} per output channel or per group of input features,
 * and the input quantize-dequantized to int8 per token. Built by {@link CtW4A8IntMethod#linear()}, which validates
 * the scheme.
 */
public final class W4A8IntLinear implements LinearMethod {
    private final QuantScheme scheme;
    /** Columns per group, or 0 per channel. */
    private final int groupSize;

    W4A8IntLinear(QuantScheme scheme, int groupSize) {
        this.scheme = scheme;
        this.groupSize = groupSize;
    }

    @Override
    public QuantScheme scheme() {
        return scheme;
    }

    @Override
    public LinearWeights load(Checkpoint checkpoint, String module, int outFeatures, int inFeatures, Arena arena) {
        if (inFeatures % 2 != 0) {
            throw new MoeException(module + ": int4 weights need an even input size; found " + inFeatures);
        }
        int blockCols = groupSize == 0 ? inFeatures : groupSize;
        int groups = (int) TensorChecks.ceilDiv(inFeatures, blockCols);
        Tensor values = LinearTensors.expectTensor(checkpoint, module, "weight", new long[]{outFeatures, inFeatures},
                DType.I8);
        Tensor scale = LinearTensors.expectTensor(checkpoint, module, "weight_scale", new long[]{outFeatures, groups},
                LinearTensors.FLOATS);
        MemorySegment codes = arena.allocate(CodeType.INT4.rowBytes(inFeatures) * outFeatures, TensorCopies.ALIGN);
        Int4Values.pack(values, outFeatures, inFeatures, codes, 0);
        ExpertMatrix m = new ExpertMatrix(1, outFeatures, inFeatures, CodeType.INT4, codes,
                new BlockScales(ScaleType.F32, LinearTensors.f32(scale, arena), 1, blockCols, outFeatures, groups),
                null, null, 0, null);
        return new LinearWeights(scheme, m, new ActivationQuant.Int8PerToken());
    }
}
