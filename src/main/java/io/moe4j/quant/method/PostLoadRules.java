package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.Tensor;

import java.util.Arrays;
import java.util.List;

import static io.moe4j.quant.method.TensorChecks.scalar;

/**
 * The seeds' post-load rules on static activation scales: read per expert, collapsed to their maximum with the
 * seed's warning when they differ.
 */
final class PostLoadRules {
    static final System.Logger LOG = System.getLogger("io.moe4j.quant");

    private PostLoadRules() {
    }

    /**
     * Static activation scales: tensor {@code suffix} (a scalar) of each local expert's projections, as
     * [local expert][projection]. A missing one fails with the seed's message and the tensor's name.
     */
    static float[][] staticScales(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                                  String suffix) {
        float[][] out = new float[ids.length][projections.size()];
        for (int k = 0; k < ids.length; k++) {
            for (int j = 0; j < projections.size(); j++) {
                String name = ExpertShapes.name(layer, ids[k], projections.get(j), suffix);
                Tensor t = ckpt.find(name).orElseThrow(() -> new MoeException(
                        "QuantConfig has static quantization, but found activation scales are None: tensor '" + name
                                + "' is missing from " + ckpt.root()));
                out[k][j] = scalar(t);
            }
        }
        return out;
    }

    /**
     * The seeds' post-load rule for static input scales: one scale for the layer, the maximum over the local experts
     * (and over gate and up for w13), with the seed's warning when they differ. Returned per local expert.
     */
    static float[] collapseToMax(float[][] perExpert, String kind) {
        int per = perExpert[0].length;
        float[] flat = new float[perExpert.length * per];
        for (int k = 0; k < perExpert.length; k++) {
            System.arraycopy(perExpert[k], 0, flat, k * per, per);
        }
        if (!allClose(flat)) {
            LOG.log(System.Logger.Level.WARNING, "Found input_scales that are not equal for " + kind
                    + " MoE layer. Using the maximum across experts for each layer.");
        }
        return filled(perExpert.length, max(flat));
    }

    /** torch.allclose(x, x[0]) with its default tolerances (rtol 1e-5, atol 1e-8), vLLM's all_close_1d. */
    static boolean allClose(float[] v) {
        for (float x : v) {
            if (Math.abs(x - v[0]) > 1e-8 + 1e-5 * Math.abs(v[0])) {
                return false;
            }
        }
        return true;
    }

    static float max(float[] v) {
        float m = Float.NEGATIVE_INFINITY;
        for (float x : v) {
            m = Math.max(m, x);
        }
        return m;
    }

    static float min(float[] v) {
        float m = Float.POSITIVE_INFINITY;
        for (float x : v) {
            m = Math.min(m, x);
        }
        return m;
    }

    /** An array of n copies of x (per-local-expert static scales after a collapse). */
    static float[] filled(int n, float x) {
        float[] out = new float[n];
        Arrays.fill(out, x);
        return out;
    }
}
