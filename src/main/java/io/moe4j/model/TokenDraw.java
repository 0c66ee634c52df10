package io.moe4j.model;

import java.util.Arrays;

/**
 * One draw of the next token from a row of logits, with its random number already taken: every runtime applies this
 * rule alike, the host here ({@link #pick}) and a device where the logits are ({@link SequenceState#forwardDrawn}),
 * so a draw needs no logits on the host.
 *
 * <p>The rule: {@code temperature == 0} is {@link Logits#argmax}. Otherwise the candidates are the finite logits
 * (NaN and -infinity are never drawn) ordered by logit, highest first, equal logits by lower id; a candidate's weight
 * is {@code exp((logit - top) / temperature)} (0 where that is under exp(-700), so no sum is of subnormals). Top-k
 * keeps the first k, then top-p the shortest prefix of those whose weight reaches {@code topP} of theirs (the token
 * that crosses stays), then min-p the ones whose weight is at least {@code minP} (the top's is 1), in that order as
 * transformers' warpers run. The token drawn is the first, walking the kept ones in id order, at which the running
 * weight passes {@code uniform} of their total.
 *
 * @param uniform the draw's random number, in [0, 1)
 */
public record TokenDraw(double temperature, int topK, double topP, double minP, double uniform) {

    public TokenDraw {
        if (!(temperature >= 0) || Double.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be a finite number >= 0, got " + temperature);
        }
        if (topK < 0 || !(topP > 0 && topP <= 1) || !(minP >= 0 && minP <= 1) || !(uniform >= 0 && uniform < 1)) {
            throw new IllegalArgumentException("not a draw: top-k " + topK + ", top-p " + topP + ", min-p " + minP
                    + ", uniform " + uniform);
        }
    }

    private static final TokenDraw GREEDY = new TokenDraw(0, 0, 1, 0, 0);

    public static TokenDraw greedy() {
        return GREEDY;
    }

    public boolean isGreedy() {
        return temperature == 0;
    }

    /** Whether any of top-k, top-p and min-p cuts the candidates (else the draw is over all of them). */
    public boolean cuts() {
        return topK > 0 || topP < 1 || minP > 0;
    }

    /**
     * The token drawn from {@code logits[off, off + vocab)} among those {@code allowed} marks (all when null); fails
     * if no finite logit is allowed.
     */
    public int pick(float[] logits, int off, int vocab, boolean[] allowed) {
        if (isGreedy()) {
            int best = argmax(logits, off, vocab, allowed);
            if (!Float.isFinite(logits[off + best]) && logits[off + best] != Float.POSITIVE_INFINITY) {
                // argmax stops at a NaN (no value is greater), or every allowed logit is -infinity: as the
                // draws below, no finite candidate
                throw new IllegalStateException("no token is allowed at this step");
            }
            return best;
        }
        return cuts() ? pickCut(logits, off, vocab, allowed) : pickAll(logits, off, vocab, allowed);
    }

    /** {@link #pick} from a whole row with no mask, or -1 when none of its logits is finite. */
    static int pickOrNone(TokenDraw draw, float[] logits) {
        try {
            return draw.pick(logits, 0, logits.length, null);
        } catch (IllegalStateException e) { // no candidate
            return -1;
        }
    }

    /** The highest logit's id, lowest id on ties; among allowed ids only when a mask is given. */
    public static int argmax(float[] logits, int off, int vocab, boolean[] allowed) {
        if (allowed == null) {
            return Logits.argmax(logits, off, vocab);
        }
        int best = -1;
        float bestValue = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            if (!allowed[i]) {
                continue;
            }
            float v = logits[off + i];
            if (best < 0 || v > bestValue) {
                best = i;
                bestValue = v;
            }
        }
        if (best < 0) {
            throw new IllegalStateException("no token is allowed at this step");
        }
        return best;
    }

    /** Bins of the logits' range that locate the kept prefix before anything is sorted. */
    private static final int BINS = 4096;

    /**
     * The cuts, with only the candidates that may be kept sorted: the logits' range is cut into bins, and the bins
     * from the top down until they hold top-k tokens, or top-p of the weight (or, for min-p alone, every logit that
     * can pass it), are collected and sorted. A bin holds every token of its logits, so what is collected is an upper
     * set of the order, and the rule runs on it as on every candidate sorted; where rounding leaves it short, every
     * candidate is sorted.
     */
    private int pickCut(float[] logits, int off, int vocab, boolean[] allowed) {
        int n = 0;
        float max = Float.NEGATIVE_INFINITY;
        float min = Float.POSITIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            float v = logits[off + i];
            if (candidate(v, allowed, i)) {
                n++;
                max = Math.max(max, v);
                min = Math.min(min, v);
            }
        }
        if (n == 0) {
            throw new IllegalStateException("no token is allowed at this step");
        }
        boolean byCount = topK > 0 && topK < n;
        // top-p over every candidate needs their total weight (in id order)
        double total = 0;
        double[] weight = null;
        if (!byCount && topP < 1) {
            weight = new double[vocab];
            for (int i = 0; i < vocab; i++) {
                if (candidate(logits[off + i], allowed, i)) {
                    weight[i] = weight(logits[off + i], max);
                    total += weight[i];
                }
            }
        }
        double scale = max > min ? (BINS - 1) / ((double) max - min) : 0;
        int cutBin = 0;
        if (byCount || topP < 1) {
            long[] count = new long[BINS];
            double[] mass = weight == null ? null : new double[BINS];
            for (int i = 0; i < vocab; i++) {
                if (candidate(logits[off + i], allowed, i)) {
                    int b = bin(logits[off + i], min, scale);
                    count[b]++;
                    if (mass != null) {
                        mass[b] += weight[i];
                    }
                }
            }
            long c = 0;
            double acc = 0;
            for (int b = BINS - 1; b >= 0; b--) {
                c += count[b];
                acc += mass == null ? 0 : mass[b];
                if (byCount ? c >= topK : acc >= topP * total) {
                    cutBin = b;
                    break;
                }
            }
        } else if (minP > 0) {
            // a logit under max + temperature * ln(minP) has a weight under minP; one bin of margin for rounding
            double floor = max + temperature * Math.log(minP);
            cutBin = floor <= min ? 0 : Math.max(0, bin((float) floor, min, scale) - 1);
        }
        int kept = -1;
        long[] keys = null;
        double[] p = null;
        for (int attempt = 0; attempt < 2 && kept < 0; attempt++) {
            int from = attempt == 0 ? cutBin : 0;
            keys = sortedKeys(logits, off, vocab, allowed, min, scale, from);
            int s = keys.length;
            // the weights of the sorted candidates that top-k leaves (those computed above where there are)
            p = new double[Math.min(s, byCount ? topK : n)];
            for (int i = 0; i < p.length; i++) {
                int id = (int) keys[i];
                p[i] = weight != null ? weight[id] : weight(logits[off + id], max);
            }
            // min-p alone collected every logit that can pass it (from the floor's bin, one bin of margin): what
            // was not collected fails it
            kept = cut(p, s, n, total, from > 0 && !byCount && !(topP < 1));
            if (from == 0 && kept < 0) {
                kept = p.length; // every candidate sorted: nothing is missing
            }
        }
        return drawInIdOrder(keys, p, kept, vocab);
    }

    private static int bin(float v, float min, double scale) {
        return (int) (((double) v - min) * scale);
    }

    /**
     * The candidates in bins from {@code fromBin} up as sort keys: the logit's order (inverted: sorting ascends)
     * above the id, so that sorting orders them by logit, highest first, equal logits by lower id. Bins only grow
     * with the logit, so the keys go into their bins, top bin first, and each bin is sorted on its own: the same
     * order as one sort of them all (and so the same sums along it), without sorting most of a vocabulary as one
     * array when nearly flat logits leave most of it in the kept prefix.
     */
    private static long[] sortedKeys(float[] logits, int off, int vocab, boolean[] allowed, float min, double scale,
                                     int fromBin) {
        int[] start = new int[BINS];
        for (int i = 0; i < vocab; i++) {
            float v = logits[off + i];
            if (candidate(v, allowed, i)) {
                int b = bin(v, min, scale);
                if (b >= fromBin) {
                    start[b]++;
                }
            }
        }
        int s = 0;
        for (int b = BINS - 1; b >= fromBin; b--) { // counts to first slots, the top bin first
            int count = start[b];
            start[b] = s;
            s += count;
        }
        int[] next = start.clone();
        long[] keys = new long[s];
        for (int i = 0; i < vocab; i++) {
            float v = logits[off + i];
            if (candidate(v, allowed, i)) {
                int b = bin(v, min, scale);
                if (b >= fromBin) {
                    keys[next[b]++] = ((long) ~orderedBits(v) << 32) | i;
                }
            }
        }
        for (int b = fromBin; b < BINS; b++) {
            if (next[b] - start[b] > 1) {
                Arrays.sort(keys, start[b], next[b]);
            }
        }
        return keys;
    }

    /**
     * How many of the {@code s} sorted candidates collected (the first of {@code n}, the first p.length of them
     * weighed: as many as top-k leaves) top-k, top-p and min-p keep, or -1 when the rule would reach past them.
     * {@code total} is every candidate's weight (used when top-k does not cut). {@code restFailMinP}: every candidate
     * not collected is known to weigh under min-p, so min-p keeping every collected one cuts there.
     */
    private int cut(double[] p, int s, int n, double total, boolean restFailMinP) {
        boolean byCount = topK > 0 && topK < n;
        int keep = byCount ? topK : n;
        if (keep > s && (byCount || !(topP < 1 || minP > 0))) {
            return -1;
        }
        int known = p.length;
        double sum = total;
        if (byCount) {
            sum = 0;
            for (int i = 0; i < keep; i++) {
                sum += p[i];
            }
        }
        boolean cutWithin = false;
        if (topP < 1) { // the smallest prefix whose share reaches topP (the token that crosses it stays)
            double acc = 0;
            for (int i = 0; i < known; i++) {
                acc += p[i];
                if (acc >= topP * sum) {
                    keep = i + 1;
                    cutWithin = true;
                    break;
                }
            }
        }
        if (minP > 0) { // relative to the top token, whose weight is p[0] = 1
            int k = 1;
            while (k < Math.min(keep, s) && p[k] >= minP * p[0]) {
                k++;
            }
            if (k < Math.min(keep, s) || k == keep || restFailMinP && k == s) {
                keep = k;
                cutWithin = true;
            }
        }
        return keep <= s && (cutWithin || byCount || keep == n) ? keep : -1;
    }

    /**
     * The draw among the first {@code keep} sorted keys (weights p), walked in id order: a few kept tokens sorted by
     * id, many (nearly flat logits under top-p or min-p) marked in an array over the vocabulary and walked in it.
     */
    private int drawInIdOrder(long[] keys, double[] p, int keep, int vocab) {
        if (keep <= vocab / 64) {
            long[] byId = new long[keep];
            for (int i = 0; i < keep; i++) {
                byId[i] = (keys[i] & 0xffffffffL) << 32 | i;
            }
            Arrays.sort(byId);
            double total = 0;
            for (int i = 0; i < keep; i++) {
                total += p[(int) byId[i]];
            }
            double r = uniform * total;
            for (int i = 0; i < keep; i++) {
                r -= p[(int) byId[i]];
                if (r < 0) {
                    return (int) (byId[i] >>> 32);
                }
            }
            return (int) (byId[keep - 1] >>> 32);
        }
        double[] w = new double[vocab];
        boolean[] kept = new boolean[vocab];
        for (int i = 0; i < keep; i++) {
            int id = (int) keys[i];
            w[id] = p[i];
            kept[id] = true;
        }
        double total = 0;
        for (int id = 0; id < vocab; id++) {
            total += w[id]; // 0 where not kept: the kept weights summed in id order
        }
        double r = uniform * total;
        int last = -1;
        for (int id = 0; id < vocab; id++) {
            if (kept[id]) {
                last = id;
                r -= w[id];
                if (r < 0) {
                    return id;
                }
            }
        }
        return last;
    }

    /** Draws from the whole tempered distribution in one pass over the vocabulary, without sorting. */
    private int pickAll(float[] logits, int off, int vocab, boolean[] allowed) {
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            if (candidate(logits[off + i], allowed, i)) {
                max = Math.max(max, logits[off + i]);
            }
        }
        if (max == Double.NEGATIVE_INFINITY) {
            throw new IllegalStateException("no token is allowed at this step");
        }
        double total = 0;
        double[] p = new double[vocab];
        for (int i = 0; i < vocab; i++) {
            if (candidate(logits[off + i], allowed, i)) {
                p[i] = weight(logits[off + i], max);
                total += p[i];
            }
        }
        double r = uniform * total;
        int last = -1;
        for (int i = 0; i < vocab; i++) {
            if (p[i] > 0) {
                last = i;
                r -= p[i];
                if (r < 0) {
                    return i;
                }
            }
        }
        return last;
    }

    /** Exponents under this give a weight of 0: exp(-700) is still a normal double, and its sums stay normal. */
    private static final double LOWEST_EXPONENT = -700;

    /**
     * A logit's weight against the top, exp((logit - top) / temperature), or 0 where that is under exp(-700): the
     * sums and walks never compute with subnormal doubles (50-100x slower on Intel cores), and a token that light
     * could not be drawn anyway.
     */
    double weight(float logit, double top) {
        double z = ((double) logit - top) / temperature;
        return z < LOWEST_EXPONENT ? 0 : Math.exp(z);
    }

    private static boolean candidate(float v, boolean[] allowed, int i) {
        return (allowed == null || allowed[i]) && v != Float.NEGATIVE_INFINITY && !Float.isNaN(v);
    }

    /** Float bits as a signed int that orders like the float (negative floats have their magnitude bits flipped). */
    private static int orderedBits(float v) {
        int bits = Float.floatToIntBits(v);
        return bits ^ ((bits >> 31) & 0x7fffffff);
    }
}
