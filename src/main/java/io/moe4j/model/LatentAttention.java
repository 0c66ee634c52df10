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
    /** Heads a task of the absorbed attention takes: they share each latent's loads. */
    private static final int HEADS_PER_TASK = 4;

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
        Rope rope = spec.rope();
        float[] cos = new float[rope.invFreq().length];
        float[] sin = new float[rope.invFreq().length];
        for (int t = 0; t < tokens; t++) {
            kvANorm.apply(latents, t * latentWidth, lora);
            rope.cosSin(start + t, cos, sin); // once a position, for the shared key and every head
            rope.rotate(latents, t * latentWidth + lora, cos, sin);
            for (int h = 0; h < heads; h++) {
                rope.rotate(qs, (t * heads + h) * qkDim + nope, cos, sin);
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
                    softmax.addBlock(query, scores, 0, n);
                    AttentionMath.weightedSum(scores, 0, n, kv, h * (nope + vDim) + nope, kvWidth, vDim,
                            softmax.sums(), query * vDim);
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
            float[] qNope = new float[nope];
            for (int t = 0; t < tokens; t++) {
                int query = t * heads + h;
                for (int i = 0; i < nope; i++) {
                    qNope[i] = FloatMath.flushSubnormal(qs[query * qkDim + i]);
                }
                // Σ_i q_nope[i] · W_UK[h] row i
                AttentionMath.weightedSum(qNope, 0, nope, w, h * headRows * lora, lora, lora, latentQueries,
                        query * lora);
                FloatMath.flushSubnormals(latentQueries, query * lora, lora);
            }
        });

        // Every head reads the same latents: a task takes up to four heads, which the block kernels serve together.
        int chunk = parallel.perTask(HEADS_PER_TASK, heads, 1);
        OnlineSoftmax softmax = new OnlineSoftmax(tokens * heads, lora);
        for (int b0 = 0; b0 < cached; b0 += expandBlock) {
            int bn = Math.min(expandBlock, cached - b0);
            float[] latents = new float[bn * lora];
            for (int j = 0; j < bn; j++) {
                System.arraycopy(data, base + (b0 + j) * latentWidth, latents, j * lora, lora);
                kvBDense.input().apply(latents, j * lora, lora);
            }
            int blockStart = b0;
            parallel.forEach(Math.ceilDiv(heads, chunk), (long) chunk * tokens * bn * (2 * lora + ropeDim), c -> {
                int h0 = c * chunk;
                int rows = Math.min(chunk, heads - h0);
                float[] scores = new float[rows * bn];
                float[] ropeScores = new float[rows * bn];
                int[] latentOff = new int[rows];
                int[] ropeOff = new int[rows];
                for (int t = 0; t < tokens; t++) {
                    int visible = (int) (start + t - first + 1);
                    int n = Math.min(bn, visible - blockStart);
                    if (n <= 0) {
                        continue;
                    }
                    for (int r = 0; r < rows; r++) {
                        int query = t * heads + h0 + r;
                        latentOff[r] = query * lora;
                        ropeOff[r] = query * qkDim + nope;
                    }
                    AttentionMath.dots(latentQueries, latentOff, rows, latents, 0, lora, n, lora, 1f, scores, 0, n);
                    AttentionMath.dots(qs, ropeOff, rows, data, base + blockStart * latentWidth + lora, latentWidth,
                            n, ropeDim, 1f, ropeScores, 0, n);
                    for (int r = 0; r < rows; r++) {
                        for (int j = r * n; j < (r + 1) * n; j++) {
                            scores[j] = (scores[j] + ropeScores[j]) * spec.scale();
                        }
                        int query = t * heads + h0 + r;
                        softmax.addBlock(query, scores, r * n, n);
                        AttentionMath.weightedSum(scores, r * n, n, latents, 0, lora, lora, softmax.sums(),
                                query * lora);
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

    /**
     * A softmax-weighted sum accumulated over blocks of positions, per query: each block's scores become weights
     * relative to the running maximum, and what earlier blocks summed is rescaled to it. Queries are independent, so
     * threads may work on different queries at once.
     */
    private static final class OnlineSoftmax {
        private final int width;
        private final float[] sums;
        private final float[] runningMax;
        private final double[] runningSum;

        OnlineSoftmax(int queries, int width) {
            this.width = width;
            this.sums = new float[queries * width];
            this.runningMax = new float[queries];
            this.runningSum = new double[queries];
            java.util.Arrays.fill(runningMax, Float.NEGATIVE_INFINITY);
        }

        /** The weighted sums, [query · width]; a block adds its weights times its values into the query's row. */
        float[] sums() {
            return sums;
        }

        /**
         * Turns scores[off, off+n) into the block's weights relative to the running maximum (0 below e^-41 of it, as
         * {@link AttentionMath#expShifted}) and rescales the query's earlier sums to that maximum.
         */
        void addBlock(int query, float[] scores, int off, int n) {
            float max = AttentionMath.max(scores, off, n, runningMax[query]);
            if (max > runningMax[query]) {
                double shift = (double) runningMax[query] - max; // -infinity for the first block
                double correction = shift < AttentionMath.DROPPED_BELOW ? 0 : Math.exp(shift);
                runningSum[query] *= correction;
                for (int i = query * width; i < (query + 1) * width; i++) {
                    sums[i] = FloatMath.flushSubnormal((float) (sums[i] * correction));
                }
            }
            runningSum[query] += AttentionMath.expShifted(scores, off, n, max);
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
