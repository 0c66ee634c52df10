package io.moe4j.model;

import java.util.Arrays;

/**
 * One draw of the next token from a row of logits, with its random number already taken: every runtime applies this
 * rule alike, the host here ({@link #pick}) and a device where the logits are ({@link SequenceState#forwardDrawn}),
 * so a draw needs no logits on the host.
 *
 * <p>The rule: {@code temperature == 0} is {@link Logits#argmax}. Otherwise the candidates are the finite logits
 * (NaN and -infinity are never drawn) ordered by logit, highest first, equal logits by lower id; a candidate's weight
 * is {@code exp((logit - top) / temperature)}. Top-k keeps the first k, then top-p the shortest prefix of
 * those whose weight reaches {@code topP} of theirs (the token that crosses stays), then min-p the ones whose weight
 * is at least {@code minP} (the top's is 1), in that order as transformers' warpers run. The token drawn is the first,
 * walking the kept ones in id order, at which the running weight passes {@code uniform} of their total.
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
            return argmax(logits, off, vocab, allowed);
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

    private int pickCut(float[] logits, int off, int vocab, boolean[] allowed) {
        // Candidates sorted by logit, highest first; ties: lower id first. A key packs the logit's order (inverted:
        // sorting ascends) above the id, so one primitive sort does it.
        long[] keys = new long[vocab];
        int n = 0;
        for (int i = 0; i < vocab; i++) {
            if (candidate(logits[off + i], allowed, i)) {
                keys[n++] = ((long) ~orderedBits(logits[off + i]) << 32) | i;
            }
        }
        if (n == 0) {
            throw new IllegalStateException("no token is allowed at this step");
        }
        Arrays.sort(keys, 0, n);
        int keep = topK > 0 ? Math.min(topK, n) : n;
        double max = logits[off + (int) keys[0]];
        double[] p = new double[keep];
        double sum = 0;
        for (int i = 0; i < keep; i++) {
            p[i] = Math.exp((logits[off + (int) keys[i]] - max) / temperature);
            sum += p[i];
        }
        if (topP < 1) { // the smallest prefix whose share reaches topP (the token that crosses it stays)
            double acc = 0;
            for (int i = 0; i < keep; i++) {
                acc += p[i];
                if (acc >= topP * sum) {
                    keep = i + 1;
                    break;
                }
            }
        }
        if (minP > 0) { // relative to the top token, whose weight is p[0] = 1
            int k = 1;
            while (k < keep && p[k] >= minP * p[0]) {
                k++;
            }
            keep = k;
        }
        // the kept ones in id order, each with its place in p
        long[] byId = new long[keep];
        for (int i = 0; i < keep; i++) {
            byId[i] = (keys[i] & 0xffffffffL) << 32 | i;
        }
        Arrays.sort(byId);
        double total = 0;
        for (int i = 0; i < keep; i++) {
            total += p[i];
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
                p[i] = Math.exp((logits[off + i] - max) / temperature);
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

    private static boolean candidate(float v, boolean[] allowed, int i) {
        return (allowed == null || allowed[i]) && v != Float.NEGATIVE_INFINITY && !Float.isNaN(v);
    }

    /** Float bits as a signed int that orders like the float (negative floats have their magnitude bits flipped). */
    private static int orderedBits(float v) {
        int bits = Float.floatToIntBits(v);
        return bits ^ ((bits >> 31) & 0x7fffffff);
    }
}
