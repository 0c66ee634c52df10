package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.RowStack;

import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.List;

/**
 * A gated MLP's gate and up as one matrix and one input quantization, so a backend runs them as one GEMM: the
 * weights stacked by {@link RowStack} (gate's rows, then up's; act-order maps kept, one per part where they differ;
 * its checks name what does not stack) once they are two halves of one w13, and one input quantization (static
 * scales: the largest, the seeds' post-load rule).
 */
final class GateUpStack {
    private GateUpStack() {
    }

    static ExpertMatrix matrices(String what, List<LinearWeights> parts, Arena arena) {
        List<ExpertMatrix> weights = parts.stream().map(LinearWeights::weight).toList();
        String why = RowStack.unsupportedReasonWithColumnOrders(weights);
        if (why != null) {
            throw new MoeException(what + ": the stacked projections do not stack by rows: " + why);
        }
        ExpertMatrix first = weights.getFirst();
        for (ExpertMatrix m : weights) {
            // two halves of one w13: as many rows each, and a shard scale each (what the backends' w13 take)
            if (m.rows() != first.rows()) {
                throw new MoeException(what + ": the stacked projections have " + first.rows() + " and " + m.rows()
                        + " rows");
            }
            if (m.shardScales() != null && m.shards() != 1) {
                throw new MoeException(what + ": a stacked projection has " + m.shards() + " shard scales, not one");
            }
        }
        return RowStack.withColumnOrders(arena, weights);
    }

    /** The one input quantization of linears that read the same input. */
    static ActivationQuant input(String what, List<LinearWeights> parts) {
        ActivationQuant q = parts.getFirst().input();
        for (LinearWeights p : parts) {
            ActivationQuant o = p.input();
            if (o.getClass() != q.getClass()) {
                throw new MoeException(what + ": the stacked projections quantize their input differently (" + q
                        + " vs " + o + ")");
            }
            q = switch (q) {
                case ActivationQuant.Fp8Static s -> new ActivationQuant.Fp8Static(
                        new float[]{Math.max(s.scale()[0], ((ActivationQuant.Fp8Static) o).scale()[0])});
                case ActivationQuant.Int8Static s -> {
                    ActivationQuant.Int8Static t = (ActivationQuant.Int8Static) o;
                    if (!Arrays.equals(s.zeroPoint(), t.zeroPoint())) {
                        throw new MoeException(what + ": the stacked projections have different input zero points");
                    }
                    yield new ActivationQuant.Int8Static(new float[]{Math.max(s.scale()[0], t.scale()[0])},
                            s.zeroPoint());
                }
                // The smaller global scale is the larger dequantization step, as CtNvfp4Method takes for w13.
                case ActivationQuant.Nvfp4 n -> new ActivationQuant.Nvfp4(
                        new float[]{Math.min(n.globalScale()[0], ((ActivationQuant.Nvfp4) o).globalScale()[0])});
                default -> {
                    if (!q.equals(o)) {
                        throw new MoeException(what + ": the stacked projections quantize their input differently ("
                                + q + " vs " + o + ")");
                    }
                    yield q;
                }
            };
        }
        return q;
    }
}
