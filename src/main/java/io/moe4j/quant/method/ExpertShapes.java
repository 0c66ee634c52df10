package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpectedTensor;
import io.moe4j.safetensors.DType;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The geometry and tensor names of a layer's expert projections: which are stacked into w13, their sizes, their
 * names, and the tensors a method expects.
 */
final class ExpertShapes {
    private ExpertShapes() {
    }

    /** The projections stacked into w13: gate then up, or up alone for a non-gated activation. */
    static List<Projection> w13Projections(MoeLayerConfig layer) {
        return layer.gateLayout() == GateLayout.NONE ? List.of(Projection.UP) : List.of(Projection.GATE, Projection.UP);
    }

    static int w13Rows(MoeLayerConfig layer) {
        return w13Projections(layer).size() * layer.intermediate();
    }

    /** Output features of one expert's projection. */
    static int rows(MoeLayerConfig layer, Projection p) {
        return p == Projection.DOWN ? layer.hidden() : layer.intermediate();
    }

    /** Input features of one expert's projection. */
    static int cols(MoeLayerConfig layer, Projection p) {
        return p == Projection.DOWN ? layer.intermediate() : layer.hidden();
    }

    static String name(MoeLayerConfig layer, int expert, Projection p, String suffix) {
        return layer.experts().tensor(expert, p, suffix);
    }

    /** Methods that read per-expert modules refuse the fused-tensor families with a message that says so. */
    static void requirePerExpert(MoeLayerConfig layer, String scheme) {
        if (layer.experts().fused()) {
            throw new MoeException("layer " + layer.layer() + ": " + scheme + " checkpoints are read from per-expert modules ("
                    + "experts.<e>.<proj>.*), but " + layer.family().modelType() + " keeps its experts in fused tensors ("
                    + layer.experts().fusedTensor("gate_up_proj") + "); this combination is not supported");
        }
    }

    static List<Projection> all(MoeLayerConfig layer) {
        List<Projection> p = new ArrayList<>(w13Projections(layer));
        p.add(Projection.DOWN);
        return p;
    }

    static List<ExpectedTensor> expected(MoeLayerConfig layer, List<Projection> projections, String suffix,
                                             DType dtype, Function<Projection, long[]> shape) {
        List<ExpectedTensor> out = new ArrayList<>();
        for (int e = 0; e < layer.numExperts(); e++) {
            for (Projection p : projections) {
                out.add(new ExpectedTensor(name(layer, e, p, suffix), dtype, shape.apply(p)));
            }
        }
        return out;
    }
}
