package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.kernel.ActivationQuant;
import io.moe4j.kernel.GateLayout;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.util.List;

import static io.moe4j.quant.method.TensorChecks.expect;

/**
 * The shared expert of a layer (DeepSeek {@code shared_experts}, Llama-4 {@code shared_expert}): a dense gated MLP
 * every token passes through, loaded as a one-expert {@link ExpertWeights} so any backend can run it. Every producer
 * excludes it from quantization, so it is bf16 / f16 / f32 as its tensors say, with no activation quantization.
 */
public final class SharedExpertLoader {
    private static final DType[] FLOATS = {DType.BF16, DType.F16, DType.F32};

    private SharedExpertLoader() {
    }

    public static ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, Arena arena) {
        MoeLayerConfig.SharedExpert shared = layer.shared();
        if (shared == null) {
            throw new MoeException("layer " + layer.layer() + " of " + layer.family().modelType() + " has no shared expert");
        }
        int h = layer.hidden();
        int i = shared.intermediate();
        Tensor gate = expect(checkpoint.tensor(shared.weight(Projection.GATE)), new long[]{i, h}, FLOATS);
        Tensor up = expect(checkpoint.tensor(shared.weight(Projection.UP)), new long[]{i, h}, FLOATS);
        Tensor down = expect(checkpoint.tensor(shared.weight(Projection.DOWN)), new long[]{h, i}, FLOATS);
        DType d13 = UnquantizedMethod.sameDtype(List.of(gate, up));
        var progress = new ExpertTensors.Progress(null);
        ExpertMatrix w13 = ExpertMatrix.dense(1, 2 * i, h, ExpertTensors.codeType(d13),
                ExpertTensors.concat(arena, List.of(gate, up), progress));
        ExpertMatrix w2 = ExpertMatrix.dense(1, h, i, ExpertTensors.codeType(down.dtype()),
                ExpertTensors.concat(arena, List.of(down), progress));
        return new ExpertWeights(QuantScheme.unquantized(ExpertTensors.weightFormat(w13.codes())), 1, h, i, w13, w2,
                null, null, GateLayout.CONCATENATED, layer.activation(), layer.swigluLimit(), ActivationQuant.NONE,
                ActivationQuant.NONE, null);
    }
}
