package io.moe4j.quant.method;

import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsException;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;

import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * A symmetric INT8 W8A8 linear (compressed-tensors {@code int-quantized}, Quark int8): {@code weight} I8 [out, in]
 * mapped as it is, with a per-tensor (scalar) or per-channel ([out] or [out, 1]) float {@code weight_scale}; the
 * input quantize-dequantized to int8 with a static {@code input_scale} (and {@code input_zero_point} when present)
 * or a dynamic per-token scale. A weight zero point other than 0 is refused (the scheme is symmetric).
 */
public final class Int8Linear implements LinearMethod {
    private final String producer;
    private final boolean perChannel;
    private final boolean staticInput;

    public Int8Linear(String producer, boolean perChannel, boolean staticInput) {
        this.producer = producer;
        this.perChannel = perChannel;
        this.staticInput = staticInput;
    }

    @Override
    public QuantScheme scheme() {
        return new QuantScheme(producer + " INT8 W8A8 (" + (perChannel ? "per-channel" : "per-tensor") + " weights, "
                + (staticInput ? "static per-tensor" : "dynamic per-token") + " activations)",
                perChannel ? WeightFormat.INT8_CHANNEL : WeightFormat.INT8_TENSOR,
                staticInput ? ActivationFormat.INT8_STATIC : ActivationFormat.INT8_TOKEN, false);
    }

    @Override
    public LinearWeights load(Checkpoint checkpoint, String module, int outFeatures, int inFeatures, Arena arena) {
        Tensor w = LinearTensors.expectTensor(checkpoint, module, "weight", new long[]{outFeatures, inFeatures}, DType.I8);
        Tensor scale = LinearTensors.tensor(checkpoint, module, "weight_scale");
        LinearTensors.find(checkpoint, module, "weight_zero_point").ifPresent(Int8Linear::requireZero);
        ExpertMatrix m;
        if (perChannel) {
            expect(scale, scale.shape().length == 1 ? new long[]{outFeatures} : new long[]{outFeatures, 1},
                    LinearTensors.FLOATS);
            m = new ExpertMatrix(1, outFeatures, inFeatures, CodeType.INT8, w.segment(),
                    new BlockScales(ScaleType.F32, LinearTensors.f32(scale, arena), 1, inFeatures, outFeatures, 1),
                    null, null, 0, null);
        } else {
            m = new ExpertMatrix(1, outFeatures, inFeatures, CodeType.INT8, w.segment(), null, null,
                    new float[]{TensorChecks.scalar(scale)}, outFeatures, null);
        }
        ActivationQuant q;
        if (staticInput) {
            float s = LinearTensors.staticScale(checkpoint, module, "input_scale");
            int[] zp = LinearTensors.find(checkpoint, module, "input_zero_point")
                    .map(t -> new int[]{TensorChecks.intScalar(t)}).orElse(null);
            q = new ActivationQuant.Int8Static(new float[]{s}, zp);
        } else {
            q = new ActivationQuant.Int8PerToken();
        }
        return new LinearWeights(scheme(), m, q);
    }

    private static void requireZero(Tensor zp) {
        for (int v : zp.toIntArray()) {
            if (v != 0) {
                throw new SafetensorsException(zp.file(), zp.name(), "zero point " + v + " is not 0: asymmetric INT8 "
                        + "weights are not supported");
            }
        }
    }
}
