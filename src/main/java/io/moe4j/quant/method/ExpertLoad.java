package io.moe4j.quant.method;

import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.LoadOptions;
import io.moe4j.quant.QuantScheme;
import io.moe4j.safetensors.Checkpoint;

import java.lang.foreign.Arena;
import java.util.List;

/**
 * One load of a layer's per-expert modules, the steps every such method shares: at the start, the layer must keep
 * its experts per module, the experts to hold are picked and progress is counted; at the end, the canonical weights
 * without biases.
 *
 * @param ids the global ids of the experts held, in local order
 */
record ExpertLoad(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena, int[] ids,
                  LoadProgress progress) {
    /** The projection of w2. */
    static final List<Projection> W2 = List.of(Projection.DOWN);

    /** Starts a load of {@code scheme}'s per-expert modules; fails for a fused-tensor family, or a bad expert id. */
    static ExpertLoad perExpert(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena,
                                String scheme) {
        ExpertShapes.requirePerExpert(layer, scheme);
        return new ExpertLoad(checkpoint, layer, options, arena, ExpertSelection.localIds(layer, options),
                new LoadProgress(options));
    }

    /** The projections stacked into w13: gate then up, or up alone. */
    List<Projection> w13() {
        return ExpertShapes.w13Projections(layer);
    }

    /** The canonical weights of the layer without biases, its experts held as {@link #ids}. */
    ExpertWeights unbiased(QuantScheme scheme, ExpertMatrix w13, ExpertMatrix w2, ActivationQuant a13,
                           ActivationQuant a2) {
        return new ExpertWeights(scheme, ids.length, layer.hidden(), layer.intermediate(), w13, w2, null, null,
                layer.gateLayout(), layer.activation(), layer.swigluLimit(), a13, a2,
                ExpertSelection.expertMap(layer, options, ids));
    }
}
