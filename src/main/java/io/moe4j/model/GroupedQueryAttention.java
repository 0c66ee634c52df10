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

    /** From this many tokens a segment attends by key panels ({@link #attendPrompt}). */
    static final int PANEL_TOKENS = 16;
    /** Consecutive tokens whose queries meet each key panel together in a prompt. */
    private static final int PROMPT_TOKENS_PER_TASK = 8;
    /** Positions of values a prompt's queries sum together (64 positions of a 64-float head: 16 KB, in L1). */
    private static final int VALUE_BLOCK = 64;

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
    public AttentionWindow window() {
        return spec.window();
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
        Rope rope = spec.rope();
        float[] cos = rope == null ? null : new float[rope.invFreq().length];
        float[] sin = rope == null ? null : new float[rope.invFreq().length];
        for (Segment s : segments) {
            for (int t = s.row(); t < s.row() + s.tokens(); t++) {
                long position = s.start() + (t - s.row());
                if (rope != null) {
                    rope.cosSin(position, cos, sin); // once a position, for all its heads
                }
                float f = spec.temperature() == null ? 1f : spec.temperature().factor(position);
                for (int h = 0; h < heads; h++) {
                    positionQueryOrKey(qs, t * qWidth + h * d, cos, sin, qNorm);
                    if (spec.temperature() != null) {
                        for (int i = 0; i < d; i++) {
                            qs[t * qWidth + h * d + i] *= f;
                        }
                    }
                }
                for (int h = 0; h < kvHeads; h++) {
                    positionQueryOrKey(ks, t * kvWidth + h * d, cos, sin, kNorm);
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

        if (tokens >= PANEL_TOKENS) {
            attendPrompt(s, qs, attended);
            cache.dropInvisible(spec.window(), start + tokens);
            return;
        }
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
                    AttentionMath.softmax(scores, r * n, n, sinks != null, sinks == null ? 0f : sinks[h0 + r]);
                }
                int values = base + kvWidth + kvh * d;
                for (int r = 0; r < queries; r++) {
                    AttentionMath.weightedSum(scores, r * n, n, data, values, width, d, attended, qOff[r]);
                }
            }
        });
        cache.dropInvisible(spec.window(), start + tokens);
    }

    /**
     * A prompt's attention, the segment's keys (cache appended) already in place: each KV head's visible keys as
     * panels of positions ({@link AttentionMath#toPanels}), so a query's scores come a vector of positions at a time
     * with no lane reduction; the queries of {@link #PROMPT_TOKENS_PER_TASK} consecutive tokens (all the group's
     * heads) meet each panel together.
     */
    private void attendPrompt(Segment s, float[] qs, float[] attended) {
        int d = spec.headDim();
        int heads = spec.heads();
        int kvHeads = spec.kvHeads();
        int group = heads / kvHeads;
        int qWidth = heads * d;
        int kvWidth = kvHeads * d;
        int tokens = s.tokens();
        KvBuffer cache = s.cache();
        long start = s.start();
        float[] data = cache.data();
        int width = cache.width();
        long first = cache.first();
        int held = (int) (cache.end() - first);
        int base = cache.offset(first);
        int panels = Math.ceilDiv(held, AttentionMath.PANEL);
        int panelFloats = panels * d * AttentionMath.PANEL;
        float[] keyPanels = new float[kvHeads * panelFloats];
        // each KV head's values contiguous, [kvh][position][d], so that a block of positions stays in L1 while
        // every query of a task sums it
        float[] values = new float[kvHeads * held * d];
        parallel.forEach(kvHeads, (long) held * d, kvh -> {
            AttentionMath.toPanels(data, base + kvh * d, width, held, d, keyPanels, kvh * panelFloats);
            for (int j = 0; j < held; j++) {
                System.arraycopy(data, base + j * width + kvWidth + kvh * d, values, (kvh * held + j) * d, d);
            }
        });

        int blocks = Math.ceilDiv(tokens, PROMPT_TOKENS_PER_TASK);
        // A task: one KV head's every stride-th block of tokens (interleaved, so causal rows spread evenly), with
        // its buffers allocated once.
        int stride = Math.min(blocks, Math.ceilDiv(4 * parallel.threads(), kvHeads));
        int rowsMax = PROMPT_TOKENS_PER_TASK * group;
        parallel.forEach(kvHeads * stride, (long) tokens / stride * group * held * d, task -> {
            int kvh = task % kvHeads;
            float[] x = new float[rowsMax * d];
            float[] scores = new float[rowsMax * panels * AttentionMath.PANEL];
            for (int b = task / kvHeads; b < blocks; b += stride) {
                int t0 = b * PROMPT_TOKENS_PER_TASK;
                int tn = Math.min(PROMPT_TOKENS_PER_TASK, tokens - t0);
                int rows = tn * group;
                // the block's queries, token-major then head, as contiguous rows of d
                for (int t = 0; t < tn; t++) {
                    System.arraycopy(qs, (s.row() + t0 + t) * qWidth + kvh * group * d, x, t * group * d, group * d);
                }
                // the panels any of the block's tokens sees: from the first token's window to the last token
                long lo = Math.max(spec.window().firstVisible(start + t0), first);
                long hi = start + t0 + tn - 1;
                int p0 = (int) (lo - first) / AttentionMath.PANEL;
                int p1 = (int) (hi - first) / AttentionMath.PANEL;
                int span = (p1 - p0 + 1) * AttentionMath.PANEL;
                for (int p = p0; p <= p1; p++) {
                    AttentionMath.panelDots(keyPanels, kvh * panelFloats + p * d * AttentionMath.PANEL, d, x, 0,
                            rows, spec.scale(), scores, (p - p0) * AttentionMath.PANEL, span);
                }
                for (int t = 0; t < tn; t++) {
                    long position = start + t0 + t;
                    long from = Math.max(spec.window().firstVisible(position), first);
                    int n = (int) (position - from + 1);
                    int off = (int) (from - first) - p0 * AttentionMath.PANEL;
                    for (int g = 0; g < group; g++) {
                        AttentionMath.softmax(scores, (t * group + g) * span + off, n, sinks != null,
                                sinks == null ? 0f : sinks[kvh * group + g]);
                    }
                }
                // the values a block of positions at a time, every query of the task through it (each output
                // element still sums its positions in order, so this is what one pass a query gives)
                int spanStart = p0 * AttentionMath.PANEL; // position index (from first) of scores' column 0
                for (int c0 = (int) (lo - first); c0 <= (int) (hi - first); c0 += VALUE_BLOCK) {
                    int c1 = Math.min(c0 + VALUE_BLOCK, (int) (hi - first) + 1);
                    for (int t = 0; t < tn; t++) {
                        long position = start + t0 + t;
                        int from = (int) (Math.max(spec.window().firstVisible(position), first) - first);
                        int j0 = Math.max(c0, from);
                        int j1 = Math.min(c1, (int) (position - first) + 1);
                        if (j1 <= j0) {
                            continue;
                        }
                        int pAt = t * group * span + j0 - spanStart;
                        int vAt = (kvh * held + j0) * d;
                        int oAt = (s.row() + t0 + t) * qWidth + kvh * group * d;
                        for (int g = 0; g < group; g++) {
                            AttentionMath.weightedSum(scores, pAt + g * span, j1 - j0, values, vAt, d, d, attended,
                                    oAt + g * d);
                        }
                    }
                }
            }
        });
    }

    /**
     * The per-head steps before attention, in the family's order: weighted norm, RoPE (by the position's angles,
     * {@link Rope#cosSin}; none for a NoPE layer), weightless norm.
     */
    private void positionQueryOrKey(float[] v, int off, float[] cos, float[] sin, RmsNorm norm) {
        int d = spec.headDim();
        if (spec.qkNorm() == GqaSpec.QkNorm.RMS) {
            norm.apply(v, off, d);
        }
        if (spec.rope() != null) {
            spec.rope().rotate(v, off, cos, sin);
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
