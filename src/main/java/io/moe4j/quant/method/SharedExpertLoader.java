package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.LinearMethod;
import io.moe4j.safetensors.Checkpoint;

import java.lang.foreign.Arena;
import java.util.List;

/**
 * The shared expert of a layer (DeepSeek {@code shared_experts}, Llama-4 {@code shared_expert}): a dense gated MLP
 * every token passes through beside the routed experts, loaded as a one-expert {@link ExpertWeights} so any backend
 * can run it. Its three projections are linears: each is stored in the scheme the quantization config gives its
 * module (unquantized where the config excludes it, as most producers do), gate and up stacked into w13
 * ({@link GateUpStack}), the input of each GEMM quantize-dequantized by that scheme's rule.
 */
public final class SharedExpertLoader {
    private SharedExpertLoader() {
    }

    /** The shared expert with unquantized weights (bf16 / f16 / f32 as its tensors say). */
    public static ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, Arena arena) {
        return load(checkpoint, layer, (java.util.function.Function<String, LinearMethod>) null, arena);
    }

    /**
     * The shared expert in the scheme {@code methodOf} gives each module (the quantization config's
     * {@code linearMethod}); null reads it unquantized. Fails naming the tensor when one is missing or mis-shaped.
     */
    public static ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer,
                                     java.util.function.Function<String, LinearMethod> methodOf, Arena arena) {
        MoeLayerConfig.SharedExpert shared = layer.shared();
        if (shared == null) {
            throw new MoeException("layer " + layer.layer() + " of " + layer.family().modelType() + " has no shared expert");
        }
        int h = layer.hidden();
        int i = shared.intermediate();
        LinearWeights gate = projection(checkpoint, shared, Projection.GATE, methodOf, i, h, arena);
        LinearWeights up = projection(checkpoint, shared, Projection.UP, methodOf, i, h, arena);
        LinearWeights down = projection(checkpoint, shared, Projection.DOWN, methodOf, h, i, arena);
        String what = "layer " + layer.layer() + " shared expert (" + shared.modulePrefix() + ")";
        boolean quantized = !gate.scheme().weights().unquantized();
        if (quantized && (!gate.scheme().equals(up.scheme()) || !gate.scheme().equals(down.scheme()))) {
            throw new MoeException(what + ": its projections are stored in different schemes (" + gate.scheme()
                    + ", " + up.scheme() + ", " + down.scheme() + "); moe4j needs one for all three");
        }
        ExpertMatrix w13 = GateUpStack.matrices(what, List.of(gate, up), arena);
        ExpertMatrix w2 = down.weight();
        QuantScheme scheme = gate.scheme();
        return new ExpertWeights(scheme, 1, h, i, w13, w2, null, null, GateLayout.CONCATENATED, layer.activation(),
                layer.swigluLimit(), GateUpStack.input(what, List.of(gate, up)), down.input(), null);
    }

    private static LinearWeights projection(Checkpoint checkpoint, MoeLayerConfig.SharedExpert shared, Projection p,
                                            java.util.function.Function<String, LinearMethod> methodOf, int out,
                                            int in, Arena arena) {
        String weight = shared.weight(p);
        String module = weight.substring(0, weight.length() - ".weight".length());
        LinearMethod method = methodOf == null ? new UnquantizedLinear(io.moe4j.quant.WeightFormat.BF16)
                : methodOf.apply(module);
        return method.load(checkpoint, module, out, in, arena);
    }
}
