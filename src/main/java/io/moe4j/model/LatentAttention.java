package io.moe4j.model;

import io.moe4j.model.linear.DenseForm;
import io.moe4j.model.linear.Linear;

/**
 * DeepSeek-V3 multi-head latent attention. The cache holds, per position, the normalized compressed latent
 * [kv_lora_rank] and the rotated rope key [qk_rope_head_dim] shared by all heads. A call attends one of two ways,
 * whichever takes fewer multiply-adds ({@link #absorbs}):
 * <ul>
 * <li>expanded, as the reference computes it: every visible cached latent through kv_b_proj into per-head keys and
 * values (a prompt, whose positions are mostly new, goes this way);</li>
 * <li>absorbed: kv_b_proj's key rows taken into each query (q_nope · W_UK, a latent-sized query per head) and its
 * value rows into the output (W_UV · the softmax-weighted sum of latents), so that no cached position is expanded.
 * A decode step then costs heads · (2 · kv_lora_rank + rope) per cached position instead of a kv_b_proj pass over
 * the whole context (for DeepSeek-V3, ~1.1 thousand against ~16.8 million multiply-adds a position and layer).</li>
 * </ul>
 * Both are the same sums in another order: the absorbed path applies kv_b_proj's input rule (the scheme's
 * quantize-dequantize) to each cached latent exactly as the expansion's forward does, and multiplies the weight
 * as the linear dequantizes it ({@link DenseForm}), kept as float32 for the model's life
 * (heads · (nope + v) · kv_lora_rank floats a layer: 67 MB for DeepSeek-V3).
 */
public final class LatentAttention implements Attention {
    /** Which way calls attend: the cheaper per call, or one way always (for tests and comparisons). */
    enum Path { CHEAPER, EXPANDED, ABSORBED }

    private final MlaSpec spec;
    private final Linear qA;
    private final RmsNorm qANorm;
    private final Linear qB;
    private final Linear kvA;
    private final RmsNorm kvANorm;
    private final Linear kvB;
    private final Linear o;
    private final Parallel parallel;
    private final int expandBlock;
    /** kv_b_proj as float rows, or null where calls always expand. */
    private final DenseForm kvBDense;
    private final Path path;

    /** Cached positions expanded through kv_b_proj (or attended absorbed) at a time. */
    static final int EXPAND_BLOCK = 256;

    /**
     * With {@code qA} and {@code qANorm} null, {@code qB} is the plain q_proj (no query low-rank path).
     *
     * @param absorb whether calls may attend absorbed (kv_b_proj must then give its {@link Linear#denseForm}); the
     *               exact reference backend passes false and always expands, as the reference does
     */
    public LatentAttention(MlaSpec spec, Linear qA, RmsNorm qANorm, Linear qB, Linear kvA, RmsNorm kvANorm, Linear kvB,
                           Linear o, Parallel parallel, boolean absorb) {
        this(spec, qA, qANorm, qB, kvA, kvANorm, kvB, o, parallel, EXPAND_BLOCK,
                absorb ? Path.CHEAPER : Path.EXPANDED);
    }

    /**
     * @param expandBlock how many cached positions are expanded through kv_b_proj (or attended absorbed) at a time
     * @param path        which way calls attend
     */
    LatentAttention(MlaSpec spec, Linear qA, RmsNorm qANorm, Linear qB, Linear kvA, RmsNorm kvANorm, Linear kvB,
                    Linear o, Parallel parallel, int expandBlock, Path path) {
        this.spec = spec;
        this.qA = qA;
        this.qANorm = qANorm;
        this.qB = qB;
        this.kvA = kvA;
        this.kvANorm = kvANorm;
        this.kvB = kvB;
        this.o = o;
        this.parallel = parallel;
        this.expandBlock = expandBlock;
        this.path = path;
        this.kvBDense = path == Path.EXPANDED ? null : kvB.denseForm().orElseThrow(() -> new IllegalArgumentException(
                "kv_b_proj (" + kvB.describe() + ") gives no dense form, which attending absorbed needs"));
    }

    @Override
    public KvBuffer newCache() {
        return new KvBuffer(spec.kvLoraRank() + spec.ropeDim());
    }

    @Override
    public float[] forward(float[] x, int tokens, long start, KvBuffer cache) {
        KvBuffer.checkContinues(cache, start);
        int heads = spec.heads();
        int nope = spec.nopeDim();
        int ropeDim = spec.ropeDim();
        int qkDim = nope + ropeDim;
        int vDim = spec.vDim();
        int lora = spec.kvLoraRank();
        int latentWidth = lora + ropeDim;

        float[] qs = new float[tokens * heads * qkDim];
        if (qA != null) {
            float[] qLatent = new float[tokens * spec.qLoraRank()];
            qA.forward(x, tokens, qLatent);
            for (int t = 0; t < tokens; t++) {
                qANorm.apply(qLatent, t * spec.qLoraRank(), spec.qLoraRank());
            }
            qB.forward(qLatent, tokens, qs);
        } else {
            qB.forward(x, tokens, qs);
        }
        float[] latents = new float[tokens * latentWidth];
        kvA.forward(x, tokens, latents);
        for (int t = 0; t < tokens; t++) {
            long position = start + t;
            kvANorm.apply(latents, t * latentWidth, lora);
            spec.rope().rotate(latents, t * latentWidth + lora, position);
            for (int h = 0; h < heads; h++) {
                spec.rope().rotate(qs, (t * heads + h) * qkDim + nope, position);
            }
        }
        cache.append(latents, tokens);

        float[] attended = absorbs(tokens, start, cache) ? attendAbsorbed(qs, tokens, start, cache)
                : attend(qs, tokens, start, cache);
        float[] out = new float[tokens * o.outFeatures()];
        o.forward(attended, tokens, out);
        return out;
    }

    /** Whether this call attends absorbed: by the path asked for, or the way with fewer multiply-adds. */
    private boolean absorbs(int tokens, long start, KvBuffer cache) {
        return switch (path) {
            case EXPANDED -> false;
            case ABSORBED -> true;
            case CHEAPER -> {
                long pairs = 0; // (query, visible position) pairs of the call
                for (int t = 0; t < tokens; t++) {
                    pairs += start + t - cache.first() + 1;
                }
                yield absorbedIsCheaper(spec, tokens, pairs, cache.rows());
            }
        };
    }

    /**
     * Multiply-adds each way for {@code tokens} queries that see {@code pairs} (query, position) pairs of
     * {@code cached} positions: expanded, kv_b_proj over every cached position plus q·k and p·v at head width;
     * absorbed, kv_b_proj's rows into each query and output plus the same pairs at latent width.
     */
    static boolean absorbedIsCheaper(MlaSpec spec, int tokens, long pairs, long cached) {
        long heads = spec.heads();
        long lora = spec.kvLoraRank();
        long headRows = spec.nopeDim() + spec.vDim();
        long expanded = cached * heads * headRows * lora + pairs * heads * (headRows + spec.ropeDim());
        long absorbed = tokens * heads * headRows * lora + pairs * heads * (2 * lora + spec.ropeDim());
        return absorbed < expanded;
    }

    /**
     * Softmax attention of every query over the cached positions it sees (all earlier ones), with the per-head keys
     * (no-rope part) and values expanded from the cached latents through kv_b_proj a block of positions at a time, so
     * that memory stays bounded by the block however long the context. The softmax is accumulated online: each block
     * rescales what the earlier ones summed to its own running maximum.
     */
    private float[] attend(float[] qs, int tokens, long start, KvBuffer cache) {
        int heads = spec.heads();
        int nope = spec.nopeDim();
        int ropeDim = spec.ropeDim();
        int qkDim = nope + ropeDim;
        int vDim = spec.vDim();
        int lora = spec.kvLoraRank();
        int latentWidth = lora + ropeDim;
        int kvWidth = heads * (nope + vDim);
        int cached = cache.rows();
        long first = cache.first();
        float[] data = cache.data();
        int base = cache.offset(first);

        OnlineSoftmax softmax = new OnlineSoftmax(tokens * heads, vDim);
        for (int b0 = 0; b0 < cached; b0 += expandBlock) {
            int bn = Math.min(expandBlock, cached - b0);
            float[] compressed = new float[bn * lora];
            for (int j = 0; j < bn; j++) {
                System.arraycopy(data, base + (b0 + j) * latentWidth, compressed, j * lora, lora);
            }
            float[] kv = new float[bn * kvWidth];
            kvB.forward(compressed, bn, kv);
            int blockStart = b0;
            // Each head updates only its own slices of the sums and the running statistics.
            parallel.forEach(heads, (long) tokens * bn * (qkDim + vDim), h -> {
                float[] scores = new float[bn];
                for (int t = 0; t < tokens; t++) {
                    int visible = (int) (start + t - first + 1); // positions first .. start+t
                    int n = Math.min(bn, visible - blockStart);
                    if (n <= 0) {
                        continue;
                    }
                    int qOff = (t * heads + h) * qkDim;
                    for (int j = 0; j < n; j++) {
                        float s = AttentionMath.dot(qs, qOff, kv, j * kvWidth + h * (nope + vDim), nope)
                                + AttentionMath.dot(qs, qOff + nope, data, base + (blockStart + j) * latentWidth + lora,
                                        ropeDim);
                        scores[j] = s * spec.scale();
                    }
                    int query = t * heads + h;
                    softmax.addBlock(query, scores, n);
                    for (int j = 0; j < n; j++) {
                        AttentionMath.axpy(scores[j], kv, j * kvWidth + h * (nope + vDim) + nope, softmax.sums(),
                                query * vDim, vDim);
                    }
                }
            });
        }
        return softmax.finish();
    }

    /**
     * The same attention with kv_b_proj taken into the queries and the output: per query and head, the latent query
     * q_nope · W_UK[h] ([kv_lora_rank]); the scores against the cached latents (each through kv_b_proj's input rule,
     * as the expansion's forward takes them) plus the rope parts; the softmax-weighted sum of those latents, online
     * over blocks of positions as in {@link #attend}; and last W_UV[h] times that sum.
     */
    private float[] attendAbsorbed(float[] qs, int tokens, long start, KvBuffer cache) {
        int heads = spec.heads();
        int nope = spec.nopeDim();
        int ropeDim = spec.ropeDim();
        int qkDim = nope + ropeDim;
        int vDim = spec.vDim();
        int lora = spec.kvLoraRank();
        int latentWidth = lora + ropeDim;
        int headRows = nope + vDim; // kv_b_proj's rows of a head: its key's no-rope part, then its value
        float[] w = kvBDense.weight();
        int cached = cache.rows();
        long first = cache.first();
        float[] data = cache.data();
        int base = cache.offset(first);

        float[] latentQueries = new float[tokens * heads * lora];
        parallel.forEach(heads, (long) tokens * nope * lora, h -> {
            for (int t = 0; t < tokens; t++) {
                int query = t * heads + h;
                for (int i = 0; i < nope; i++) {
                    float c = FloatMath.flushSubnormal(qs[query * qkDim + i]);
                    AttentionMath.axpy(c, w, (h * headRows + i) * lora, latentQueries, query * lora, lora);
                }
                flushSubnormals(latentQueries, query * lora, lora);
            }
        });

        OnlineSoftmax softmax = new OnlineSoftmax(tokens * heads, lora);
        for (int b0 = 0; b0 < cached; b0 += expandBlock) {
            int bn = Math.min(expandBlock, cached - b0);
            float[] latents = new float[bn * lora];
            for (int j = 0; j < bn; j++) {
                System.arraycopy(data, base + (b0 + j) * latentWidth, latents, j * lora, lora);
                kvBDense.input().apply(latents, j * lora, lora);
            }
            int blockStart = b0;
            parallel.forEach(heads, (long) tokens * bn * (2 * lora + ropeDim), h -> {
                float[] scores = new float[bn];
                for (int t = 0; t < tokens; t++) {
                    int visible = (int) (start + t - first + 1);
                    int n = Math.min(bn, visible - blockStart);
                    if (n <= 0) {
                        continue;
                    }
                    int query = t * heads + h;
                    for (int j = 0; j < n; j++) {
                        float s = AttentionMath.dot(latentQueries, query * lora, latents, j * lora, lora)
                                + AttentionMath.dot(qs, query * qkDim + nope, data,
                                        base + (blockStart + j) * latentWidth + lora, ropeDim);
                        scores[j] = s * spec.scale();
                    }
                    softmax.addBlock(query, scores, n);
                    for (int j = 0; j < n; j++) {
                        AttentionMath.axpy(scores[j], latents, j * lora, softmax.sums(), query * lora, lora);
                    }
                }
            });
        }
        float[] weighted = softmax.finish();

        float[] attended = new float[tokens * heads * vDim];
        parallel.forEach(heads, (long) tokens * vDim * lora, h -> {
            for (int t = 0; t < tokens; t++) {
                int query = t * heads + h;
                for (int m = 0; m < vDim; m++) {
                    attended[query * vDim + m] = FloatMath.flushSubnormal(
                            AttentionMath.dot(w, (h * headRows + nope + m) * lora, weighted, query * lora, lora));
                }
            }
        });
        return attended;
    }

    private static void flushSubnormals(float[] x, int off, int len) {
        for (int i = off; i < off + len; i++) {
            x[i] = FloatMath.flushSubnormal(x[i]);
        }
    }

    /**
     * A softmax-weighted sum accumulated over blocks of positions, per query: each block's scores become weights
     * relative to the running maximum, and what earlier blocks summed is rescaled to it. Queries are independent, so
     * threads may work on different queries at once.
     */
    private static final class OnlineSoftmax {
        private final int width;
        private final float[] sums;
        private final double[] runningMax;
        private final double[] runningSum;

        OnlineSoftmax(int queries, int width) {
            this.width = width;
            this.sums = new float[queries * width];
            this.runningMax = new double[queries];
            this.runningSum = new double[queries];
            java.util.Arrays.fill(runningMax, Double.NEGATIVE_INFINITY);
        }

        /** The weighted sums, [query · width]; a block adds its weights times its values into the query's row. */
        float[] sums() {
            return sums;
        }

        /** Turns scores[0, n) into the block's weights (flushed to float) and rescales the query's earlier sums. */
        void addBlock(int query, float[] scores, int n) {
            double blockMax = Double.NEGATIVE_INFINITY;
            for (int j = 0; j < n; j++) {
                blockMax = Math.max(blockMax, scores[j]);
            }
            double max = Math.max(runningMax[query], blockMax);
            double correction = Math.exp(runningMax[query] - max); // 0 for the first block
            if (correction != 1.0) {
                runningSum[query] *= correction;
                for (int i = query * width; i < (query + 1) * width; i++) {
                    sums[i] = FloatMath.flushSubnormal((float) (sums[i] * correction));
                }
            }
            for (int j = 0; j < n; j++) {
                double e = Math.exp(scores[j] - max);
                runningSum[query] += e;
                scores[j] = FloatMath.flushSubnormal((float) e);
            }
            runningMax[query] = max;
        }

        /** The sums divided by each query's total weight. */
        float[] finish() {
            for (int query = 0; query < runningSum.length; query++) {
                float inv = (float) (1.0 / runningSum[query]);
                for (int i = query * width; i < (query + 1) * width; i++) {
                    sums[i] = FloatMath.flushSubnormal(sums[i] * inv);
                }
            }
            return sums;
        }
    }

    @Override
    public void close() {
        if (qA != null) {
            qA.close();
        }
        qB.close();
        kvA.close();
        kvB.close();
        o.close();
    }
}
