package io.moe4j.model;

import java.util.List;

import io.moe4j.model.linear.Linear;

/**
 * Grouped-query attention with the variants of gpt-oss (biases, sinks, sliding layers), Qwen3-MoE (q/k RMSNorm),
 * Mixtral (optional sliding window) and Llama-4 (chunked layers, NoPE layers, L2 q/k norm, temperature tuning).
 * The cache row of a position is its keys then its values, [2 · kvHeads · headDim].
 */
public final class GroupedQueryAttention implements Attention {
    private final GqaSpec spec;
    private final Linear q;
    private final Linear k;
    private final Linear v;
    private final Linear o;
    private final RmsNorm qNorm;
    private final RmsNorm kNorm;
    private final float[] sinks;
    private final Parallel parallel;

    /**
     * @param qNorm per-head norm of the queries (weighted RMSNorm for Qwen3, weightless for Llama-4), or null
     * @param sinks per-head sink logits, or null
     * @param parallel the threads that attention heads are spread over
     */
    public GroupedQueryAttention(GqaSpec spec, Linear q, Linear k, Linear v, Linear o, RmsNorm qNorm, RmsNorm kNorm,
                                 float[] sinks, Parallel parallel) {
        this.spec = spec;
        this.q = q;
        this.k = k;
        this.v = v;
        this.o = o;
        this.qNorm = qNorm;
        this.kNorm = kNorm;
        this.sinks = sinks;
        this.parallel = parallel;
    }

    @Override
    public KvBuffer newCache() {
        return new KvBuffer(2 * spec.kvHeads() * spec.headDim());
    }

    @Override
    public float[] forward(float[] x, int tokens, long start, KvBuffer cache) {
        return forward(x, tokens, List.of(new Segment(0, tokens, start, cache)));
    }

    /**
     * Several sequences in one call: the projections run once over all rows (so their weights are read once per
     * step), the attention itself per segment against that segment's own cache.
     */
    @Override
    public float[] forward(float[] x, int tokens, List<Segment> segments) {
        for (Segment s : segments) {
            KvBuffer.checkContinues(s.cache(), s.start());
        }
        int d = spec.headDim();
        int heads = spec.heads();
        int kvHeads = spec.kvHeads();
        int qWidth = heads * d;
        int kvWidth = kvHeads * d;
        float[] qs = new float[tokens * qWidth];
        float[] ks = new float[tokens * kvWidth];
        float[] vs = new float[tokens * kvWidth];
        q.forward(x, tokens, qs);
        k.forward(x, tokens, ks);
        v.forward(x, tokens, vs);

        float[] attended = new float[tokens * qWidth];
        for (Segment s : segments) {
            for (int t = s.row(); t < s.row() + s.tokens(); t++) {
                long position = s.start() + (t - s.row());
                for (int h = 0; h < heads; h++) {
                    positionQueryOrKey(qs, t * qWidth + h * d, position, qNorm);
                    if (spec.temperature() != null) {
                        float f = spec.temperature().factor(position);
                        for (int i = 0; i < d; i++) {
                            qs[t * qWidth + h * d + i] *= f;
                        }
                    }
                }
                for (int h = 0; h < kvHeads; h++) {
                    positionQueryOrKey(ks, t * kvWidth + h * d, position, kNorm);
                }
            }
            attend(s, qs, ks, vs, attended);
        }

        float[] out = new float[tokens * o.outFeatures()];
        o.forward(attended, tokens, out);
        return out;
    }

    /** Appends the segment's keys and values to its cache and writes its rows of {@code attended}. */
    private void attend(Segment s, float[] qs, float[] ks, float[] vs, float[] attended) {
        int d = spec.headDim();
        int heads = spec.heads();
        int kvHeads = spec.kvHeads();
        int qWidth = heads * d;
        int kvWidth = kvHeads * d;
        int tokens = s.tokens();
        KvBuffer cache = s.cache();
        long start = s.start();
        float[] rows = new float[tokens * 2 * kvWidth];
        for (int t = 0; t < tokens; t++) {
            int src = (s.row() + t) * kvWidth;
            System.arraycopy(ks, src, rows, t * 2 * kvWidth, kvWidth);
            System.arraycopy(vs, src, rows, t * 2 * kvWidth + kvWidth, kvWidth);
        }
        cache.append(rows, tokens);

        int group = heads / kvHeads;
        float[] data = cache.data();
        int width = cache.width();
        int held = (int) (cache.end() - cache.first());
        // A task is up to four query heads of one KV head (they read the same keys and values, so the block kernels
        // load each once for all), fewer when that leaves fewer than two tasks a thread (one a thread makes every
        // step wait for the slowest), over every stride-th token of the segment (interleaved, so that causal
        // prompts' longer rows spread evenly).
        int chunk = parallel.perTask(4, group, (long) tokens * kvHeads);
        int chunks = Math.ceilDiv(group, chunk);
        int stride = Math.min(tokens, Math.ceilDiv(4 * parallel.threads(), kvHeads * chunks));
        // Each task writes only its own heads' slices of its tokens' rows of `attended`.
        parallel.forEach(stride * kvHeads * chunks, 2L * chunk * held * d * Math.ceilDiv(tokens, stride), task -> {
            int kvh = task / chunks % kvHeads;
            int h0 = kvh * group + task % chunks * chunk;
            int queries = Math.min(chunk, kvh * group + group - h0);
            int[] qOff = new int[queries];
            float[] scores = new float[queries * held];
            for (int t = task / (kvHeads * chunks); t < tokens; t += stride) {
                long position = start + t;
                long from = Math.max(spec.window().firstVisible(position), cache.first());
                int n = (int) (position - from + 1);
                int base = cache.offset(from);
                for (int r = 0; r < queries; r++) {
                    qOff[r] = (s.row() + t) * qWidth + (h0 + r) * d;
                }
                AttentionMath.dots(qs, qOff, queries, data, base + kvh * d, width, n, d, spec.scale(), scores, 0, n);
                for (int r = 0; r < queries; r++) {
                    int h = h0 + r;
                    AttentionMath.softmax(scores, r * n, n, sinks != null, sinks == null ? 0f : sinks[h]);
                    AttentionMath.weightedSum(scores, r * n, n, data, base + kvWidth + kvh * d, width, d, attended,
                            qOff[r]);
                }
            }
        });
        cache.dropBefore(spec.window().keepFrom(start + tokens));
    }

    /** The per-head steps before attention, in the family's order: weighted norm, RoPE, weightless norm. */
    private void positionQueryOrKey(float[] v, int off, long position, RmsNorm norm) {
        int d = spec.headDim();
        if (spec.qkNorm() == GqaSpec.QkNorm.RMS) {
            norm.apply(v, off, d);
        }
        if (spec.rope() != null) {
            spec.rope().rotate(v, off, position);
        }
        if (spec.qkNorm() == GqaSpec.QkNorm.L2) {
            norm.apply(v, off, d);
        }
    }

    @Override
    public void close() {
        q.close();
        k.close();
        v.close();
        o.close();
    }
}
