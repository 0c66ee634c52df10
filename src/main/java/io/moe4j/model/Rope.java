package io.moe4j.model;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;

/**
 * Rotary position embedding of one attention kind: its inverse frequencies (default, linear, llama3 or YaRN
 * scaling, computed as transformers' {@code modeling_rope_utils} defines them), the attention factor that YaRN
 * multiplies cos and sin by, and how the rotated dimensions pair up.
 *
 * @param invFreq         one inverse frequency per rotated pair (dim / 2 of them), float32 as the reference keeps them
 * @param attentionFactor multiplies cos and sin (YaRN's mscale; 1 otherwise)
 * @param interleaved     pairs (x[2i], x[2i+1]) (Llama-4's complex form, DeepSeek's {@code rope_interleave}) rather
 *                        than (x[i], x[i + dim/2]) (the {@code rotate_half} form)
 */
public record Rope(float[] invFreq, float attentionFactor, boolean interleaved) {

    public int dim() {
        return invFreq.length * 2;
    }

    /** Rotates the {@code dim()} values of v at {@code off} for {@code position}. */
    public void rotate(float[] v, int off, long position) {
        float[] cos = new float[invFreq.length];
        float[] sin = new float[invFreq.length];
        cosSin(position, cos, sin);
        rotate(v, off, cos, sin);
    }

    /**
     * cos[i] and sin[i] of pair i's angle at {@code position}, times the attention factor: a float32 angle and
     * cos/sin, as the reference computes them before casting up. Computed once a position, they serve every head
     * rotated there ({@link #rotate(float[], int, float[], float[])}): a decode step of gpt-oss rotates 72 heads a
     * layer, and the trigonometry of each head on its own cost more than the rest of the rotation.
     */
    public void cosSin(long position, float[] cos, float[] sin) {
        for (int i = 0; i < invFreq.length; i++) {
            float angle = (float) position * invFreq[i];
            cos[i] = (float) Math.cos(angle) * attentionFactor;
            sin[i] = (float) Math.sin(angle) * attentionFactor;
        }
    }

    /** Rotates the {@code dim()} values of v at {@code off} by the angles {@link #cosSin} gave for a position. */
    public void rotate(float[] v, int off, float[] cos, float[] sin) {
        int half = invFreq.length;
        for (int i = 0; i < half; i++) {
            float c = cos[i];
            float s = sin[i];
            int a = interleaved ? off + 2 * i : off + i;
            int b = interleaved ? a + 1 : off + i + half;
            float x1 = v[a];
            float x2 = v[b];
            v[a] = FloatMath.flushSubnormal(x1 * c - x2 * s);
            v[b] = FloatMath.flushSubnormal(x2 * c + x1 * s);
        }
    }

    /**
     * The RoPE of a config: {@code rope_theta} and {@code rope_scaling} (legacy keys, {@code type} or
     * {@code rope_type}) or v5's {@code rope_parameters}.
     *
     * @param text                   the (text) config
     * @param dim                    rotated dimensions (head_dim, or DeepSeek's qk_rope_head_dim)
     * @param maxPositionEmbeddings  the config's {@code max_position_embeddings}
     * @param where                  the config file, for messages
     */
    public static Rope of(JsonNode text, int dim, int maxPositionEmbeddings, boolean interleaved, String where) {
        JsonNode params = text.path("rope_parameters");
        if (!params.isObject()) {
            params = text.path("rope_scaling");
        }
        double theta = params.isObject() && params.has("rope_theta") ? params.get("rope_theta").asDouble()
                : text.path("rope_theta").asDouble(10000.0);
        String type = !params.isObject() ? "default"
                : params.path("rope_type").asText(params.path("type").asText("default"));
        double partial = params.path("partial_rotary_factor").asDouble(text.path("partial_rotary_factor").asDouble(1.0));
        if (partial != 1.0) {
            throw new MoeException(where + ": partial_rotary_factor " + partial + " is not supported");
        }
        if (dim % 2 != 0 || dim <= 0) {
            throw new MoeException(where + ": rotary dimension " + dim + " must be even and positive");
        }
        double[] base = new double[dim / 2];
        for (int i = 0; i < base.length; i++) {
            base[i] = 1.0 / Math.pow(theta, (2.0 * i) / dim);
        }
        return switch (type) {
            case "default" -> new Rope(toFloat(base), 1f, interleaved);
            case "linear" -> {
                double factor = required(params, "factor", where);
                double[] f = new double[base.length];
                for (int i = 0; i < f.length; i++) {
                    f[i] = base[i] / factor;
                }
                yield new Rope(toFloat(f), 1f, interleaved);
            }
            case "llama3" -> new Rope(toFloat(llama3(base, params, where)), 1f, interleaved);
            case "yarn" -> yarn(base, theta, dim, params, maxPositionEmbeddings, interleaved, where);
            default -> throw new MoeException(where + ": rope type '" + type + "' is not supported (default, linear, llama3, yarn)");
        };
    }

    private static double[] llama3(double[] invFreq, JsonNode p, String where) {
        double factor = required(p, "factor", where);
        double low = required(p, "low_freq_factor", where);
        double high = required(p, "high_freq_factor", where);
        double oldContext = required(p, "original_max_position_embeddings", where);
        double lowWavelen = oldContext / low;
        double highWavelen = oldContext / high;
        double[] out = new double[invFreq.length];
        for (int i = 0; i < out.length; i++) {
            double wavelen = 2 * Math.PI / invFreq[i];
            if (wavelen < highWavelen) {
                out[i] = invFreq[i];
            } else if (wavelen > lowWavelen) {
                out[i] = invFreq[i] / factor;
            } else {
                double smooth = (oldContext / wavelen - low) / (high - low);
                out[i] = (1 - smooth) * invFreq[i] / factor + smooth * invFreq[i];
            }
        }
        return out;
    }

    private static Rope yarn(double[] extrapolation, double theta, int dim, JsonNode p, int maxPositions,
                             boolean interleaved, String where) {
        double original = p.has("original_max_position_embeddings")
                ? p.get("original_max_position_embeddings").asDouble() : maxPositions;
        double factor = p.hasNonNull("factor") ? p.get("factor").asDouble() : maxPositions / original;
        double attentionFactor;
        if (p.hasNonNull("attention_factor")) {
            attentionFactor = p.get("attention_factor").asDouble();
        } else {
            double mscale = p.path("mscale").asDouble(0);
            double mscaleAllDim = p.path("mscale_all_dim").asDouble(0);
            attentionFactor = mscale != 0 && mscaleAllDim != 0
                    ? yarnMscale(factor, mscale) / yarnMscale(factor, mscaleAllDim) : yarnMscale(factor, 1);
        }
        double betaFast = p.path("beta_fast").asDouble(0) != 0 ? p.get("beta_fast").asDouble() : 32;
        double betaSlow = p.path("beta_slow").asDouble(0) != 0 ? p.get("beta_slow").asDouble() : 1;
        boolean truncate = p.path("truncate").asBoolean(true);
        double low = correctionDim(betaFast, dim, theta, original);
        double high = correctionDim(betaSlow, dim, theta, original);
        if (truncate) {
            low = Math.floor(low);
            high = Math.ceil(high);
        }
        low = Math.max(low, 0);
        high = Math.min(high, dim - 1);
        if (low == high) {
            high += 0.001; // as the reference does, to keep the ramp finite
        }
        double[] out = new double[extrapolation.length];
        for (int i = 0; i < out.length; i++) {
            double ramp = Math.clamp((i - low) / (high - low), 0.0, 1.0);
            double extrapolationWeight = 1 - ramp;
            double interpolation = extrapolation[i] / factor;
            out[i] = interpolation * (1 - extrapolationWeight) + extrapolation[i] * extrapolationWeight;
        }
        return new Rope(toFloat(out), (float) attentionFactor, interleaved);
    }

    /** YaRN's magnitude correction 0.1·m·ln(s) + 1 (1 for s ≤ 1). */
    public static double yarnMscale(double scale, double mscale) {
        return scale <= 1 ? 1.0 : 0.1 * mscale * Math.log(scale) + 1.0;
    }

    private static double correctionDim(double rotations, int dim, double base, double maxPositions) {
        return dim * Math.log(maxPositions / (rotations * 2 * Math.PI)) / (2 * Math.log(base));
    }

    private static double required(JsonNode p, String key, String where) {
        if (!p.hasNonNull(key) || !p.get(key).isNumber()) {
            throw new MoeException(where + ": rope_scaling needs a number '" + key + "'");
        }
        return p.get(key).asDouble();
    }

    private static float[] toFloat(double[] d) {
        float[] f = new float[d.length];
        for (int i = 0; i < d.length; i++) {
            f[i] = (float) d[i];
        }
        return f;
    }
}
