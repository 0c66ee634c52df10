package io.moe4j.routing;

import io.moe4j.MoeException;

import java.util.Arrays;

/**
 * Chooses experts for each token from its hidden state. Logits are computed in double against the router's
 * float weights (the reference computes routers in float64), so near-ties resolve as the reference resolves them.
 * Immutable and thread-safe.
 */
public final class Router implements TokenRouter {
    private final RouterSpec spec;
    private final int hidden;
    private final float[] weight;      // [E, H]
    private final float[] bias;        // [E] or null: added to logits (gpt-oss)
    private final float[] correction;  // [E] or null: DeepSeek's selection-only bias

    public Router(RouterSpec spec, int hidden, float[] weight, float[] bias, float[] correction) {
        this.spec = spec;
        this.hidden = hidden;
        if (weight.length != spec.numExperts() * hidden) {
            throw new IllegalArgumentException("router weight has " + weight.length + " values, expected "
                    + spec.numExperts() + " × " + hidden);
        }
        if (bias != null && bias.length != spec.numExperts() || correction != null && correction.length != spec.numExperts()) {
            throw new IllegalArgumentException("router bias must have " + spec.numExperts() + " values");
        }
        if (spec.kind() == RouterKind.SIGMOID_GROUPED_TOPK) {
            int perGroup = spec.numExperts() / spec.groups();
            if (spec.groups() > 1 && perGroup < 2) {
                throw new MoeException("grouped top-k ranks groups by their top-2 scores: " + spec.numExperts()
                        + " experts in " + spec.groups() + " groups leaves fewer than 2 per group");
            }
            if (spec.topK() > spec.topkGroups() * perGroup) {
                throw new MoeException("top-k " + spec.topK() + " exceeds the " + spec.topkGroups() * perGroup
                        + " experts of the " + spec.topkGroups() + " chosen groups");
            }
        }
        this.weight = weight.clone();
        this.bias = bias == null ? null : bias.clone();
        this.correction = correction == null ? null : correction.clone();
    }

    public RouterSpec spec() {
        return spec;
    }

    public int hidden() {
        return hidden;
    }

    /** A copy of the router's weight, [E, H] row-major (for backends that route on their device). */
    public float[] weight() {
        return weight.clone();
    }

    /** A copy of the bias added to the logits, or null. */
    public float[] bias() {
        return bias == null ? null : bias.clone();
    }

    /** A copy of DeepSeek's selection-only correction bias, or null. */
    public float[] correction() {
        return correction == null ? null : correction.clone();
    }

    @Override
    public String where() {
        return "host";
    }

    /** Routes {@code tokens} rows of {@code x} ([T, H], row-major). */
    @Override
    public Routing route(float[] x, int tokens) {
        return select(logits(x, tokens), tokens);
    }

    /**
     * The router's logits for {@code tokens} rows of {@code x}: [T, E] row-major, bias added; each a float64 sum
     * over the columns in order. What {@link #select} takes.
     */
    public double[] logits(float[] x, int tokens) {
        checkInput(x, tokens);
        int e = spec.numExperts();
        double[] out = new double[tokens * e];
        for (int t = 0; t < tokens; t++) {
            logits(x, t, out, t * e);
        }
        return out;
    }

    /**
     * Refuses a batch that {@code x} cannot hold (a longer x is fine: its first T rows are routed). Routers that
     * compute the logits their own way call it so that a bad call fails the same way everywhere.
     */
    public void checkInput(float[] x, int tokens) {
        if (tokens < 0 || x.length < (long) tokens * hidden) {
            throw new IllegalArgumentException("x must hold " + tokens + " x " + hidden + " values, has " + x.length);
        }
    }

    /**
     * Chooses each token's experts from its logits ([T, E] row-major, bias added, as {@link #logits} computes
     * them): scores, DeepSeek's group mask, top-k with ties to the lower expert, weights, choices sorted by expert.
     * Routers that compute the logits elsewhere share this selection, so the rules exist once.
     */
    public Routing select(double[] allLogits, int tokens) {
        int e = spec.numExperts();
        int k = spec.topK();
        if (tokens < 0 || allLogits.length < (long) tokens * e) {
            throw new IllegalArgumentException("logits must hold " + tokens + " x " + e + " values, has "
                    + allLogits.length);
        }
        int[] ids = new int[tokens * k];
        float[] weights = new float[tokens * k];
        double[] logits = new double[e];
        double[] scores = new double[e];
        double[] choice = new double[e];
        int[] chosen = new int[k];
        double[] w = new double[k];
        for (int t = 0; t < tokens; t++) {
            System.arraycopy(allLogits, t * e, logits, 0, e);
            switch (spec.kind()) {
                case SOFTMAX_TOPK -> {
                    softmax(logits, scores);
                    topK(scores, k, chosen);
                    for (int j = 0; j < k; j++) {
                        w[j] = scores[chosen[j]];
                    }
                    if (spec.renormalize()) {
                        normalize(w, 0);
                    }
                }
                case TOPK_SOFTMAX -> {
                    topK(logits, k, chosen);
                    double max = Double.NEGATIVE_INFINITY;
                    for (int j = 0; j < k; j++) {
                        max = Math.max(max, logits[chosen[j]]);
                    }
                    for (int j = 0; j < k; j++) {
                        w[j] = Math.exp(logits[chosen[j]] - max);
                    }
                    normalize(w, 0);
                }
                case SIGMOID_GROUPED_TOPK -> {
                    for (int i = 0; i < e; i++) {
                        scores[i] = sigmoid(logits[i]);
                        choice[i] = scores[i] + (correction == null ? 0 : correction[i]);
                    }
                    maskAllButBestGroups(choice);
                    topK(choice, k, chosen);
                    for (int j = 0; j < k; j++) {
                        w[j] = scores[chosen[j]];
                    }
                    if (spec.renormalize()) {
                        normalize(w, 1e-20);
                    }
                    for (int j = 0; j < k; j++) {
                        w[j] *= spec.routedScalingFactor();
                    }
                }
                case SIGMOID_TOP1_ON_INPUT -> {
                    topK(logits, k, chosen);
                    for (int j = 0; j < k; j++) {
                        w[j] = sigmoid(logits[chosen[j]]);
                    }
                }
            }
            sortByExpert(chosen, w);
            for (int j = 0; j < k; j++) {
                ids[t * k + j] = chosen[j];
                weights[t * k + j] = (float) w[j];
            }
        }
        return new Routing(tokens, k, ids, weights, spec.weightOnInput());
    }

    private void logits(float[] x, int t, double[] out, int outOff) {
        int base = t * hidden;
        for (int i = 0; i < spec.numExperts(); i++) {
            double acc = 0;
            int row = i * hidden;
            for (int c = 0; c < hidden; c++) {
                acc += (double) weight[row + c] * x[base + c];
            }
            out[outOff + i] = acc + (bias == null ? 0 : bias[i]);
        }
    }

    /** DeepSeek group-limited selection: keep the topk_group groups with the largest sum of their two best scores. */
    private void maskAllButBestGroups(double[] choice) {
        int groups = spec.groups();
        if (groups <= 1) {
            return;
        }
        int perGroup = choice.length / groups;
        double[] groupScore = new double[groups];
        for (int g = 0; g < groups; g++) {
            double best = Double.NEGATIVE_INFINITY;
            double second = Double.NEGATIVE_INFINITY;
            for (int i = g * perGroup; i < (g + 1) * perGroup; i++) {
                double v = choice[i];
                if (v > best) {
                    second = best;
                    best = v;
                } else if (v > second) {
                    second = v;
                }
            }
            groupScore[g] = best + second;
        }
        int[] keep = new int[spec.topkGroups()];
        topK(groupScore, keep.length, keep);
        boolean[] kept = new boolean[groups];
        for (int g : keep) {
            kept[g] = true;
        }
        for (int g = 0; g < groups; g++) {
            if (!kept[g]) {
                Arrays.fill(choice, g * perGroup, (g + 1) * perGroup, Double.NEGATIVE_INFINITY);
            }
        }
    }

    /** Indices of the k largest values, largest first; ties go to the lower index. */
    static void topK(double[] v, int k, int[] out) {
        boolean[] taken = new boolean[v.length];
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int i = 0; i < v.length; i++) {
                if (!taken[i] && (best < 0 || v[i] > v[best])) {
                    best = i;
                }
            }
            taken[best] = true;
            out[j] = best;
        }
    }

    private static void softmax(double[] logits, double[] out) {
        double max = Double.NEGATIVE_INFINITY;
        for (double l : logits) {
            max = Math.max(max, l);
        }
        double sum = 0;
        for (int i = 0; i < logits.length; i++) {
            out[i] = Math.exp(logits[i] - max);
            sum += out[i];
        }
        for (int i = 0; i < logits.length; i++) {
            out[i] /= sum;
        }
    }

    private static void normalize(double[] w, double epsilon) {
        double sum = epsilon;
        for (double v : w) {
            sum += v;
        }
        for (int j = 0; j < w.length; j++) {
            w[j] /= sum;
        }
    }

    private static double sigmoid(double x) {
        return 1.0 / (1.0 + Math.exp(-x));
    }

    private static void sortByExpert(int[] ids, double[] w) {
        for (int i = 1; i < ids.length; i++) {
            for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
                int ti = ids[j];
                ids[j] = ids[j - 1];
                ids[j - 1] = ti;
                double tw = w[j];
                w[j] = w[j - 1];
                w[j - 1] = tw;
            }
        }
    }
}
