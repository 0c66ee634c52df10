package io.moe4j.model;

import io.moe4j.model.linear.Linear;

/**
 * DeepSeek-V3 multi-head latent attention. The cache holds, per position, the normalized compressed latent
 * [kv_lora_rank] and the rotated rope key [qk_rope_head_dim] shared by all heads; per-head keys and values are
 * expanded from the cached latents through kv_b_proj when attending, exactly as the reference computes them. That
 * costs a kv_b_proj pass over the whole context per call; absorbing kv_b_proj into the query and output (the usual
 * MLA decode) needs a transposed product of the quantized weight that {@link Linear} does not offer yet.
 */
public final class LatentAttention implements Attention {
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

    /** Cached positions expanded through kv_b_proj at a time. */
    static final int EXPAND_BLOCK = 256;

    /** With {@code qA} and {@code qANorm} null, {@code qB} is the plain q_proj (no query low-rank path). */
    public LatentAttention(MlaSpec spec, Linear qA, RmsNorm qANorm, Linear qB, Linear kvA, RmsNorm kvANorm, Linear kvB,
                           Linear o, Parallel parallel) {
        this(spec, qA, qANorm, qB, kvA, kvANorm, kvB, o, parallel, EXPAND_BLOCK);
    }

    /** @param expandBlock how many cached positions are expanded through kv_b_proj at a time */
    LatentAttention(MlaSpec spec, Linear qA, RmsNorm qANorm, Linear qB, Linear kvA, RmsNorm kvANorm, Linear kvB,
                    Linear o, Parallel parallel, int expandBlock) {
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

        float[] attended = attend(qs, tokens, start, cache);
        float[] out = new float[tokens * o.outFeatures()];
        o.forward(attended, tokens, out);
        return out;
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

        float[] attended = new float[tokens * heads * vDim];
        double[] runningMax = new double[tokens * heads];
        double[] runningSum = new double[tokens * heads];
        java.util.Arrays.fill(runningMax, Double.NEGATIVE_INFINITY);
        for (int b0 = 0; b0 < cached; b0 += expandBlock) {
            int bn = Math.min(expandBlock, cached - b0);
            float[] compressed = new float[bn * lora];
            for (int j = 0; j < bn; j++) {
                System.arraycopy(data, base + (b0 + j) * latentWidth, compressed, j * lora, lora);
            }
            float[] kv = new float[bn * kvWidth];
            kvB.forward(compressed, bn, kv);
            int blockStart = b0;
            // Each head updates only its own slices of `attended` and the running statistics.
            parallel.forEach(heads, (long) tokens * bn * (qkDim + vDim), h -> {
                float[] scores = new float[bn];
                for (int t = 0; t < tokens; t++) {
                    int visible = (int) (start + t - first + 1); // positions first .. start+t
                    int n = Math.min(bn, visible - blockStart);
                    if (n <= 0) {
                        continue;
                    }
                    int qOff = (t * heads + h) * qkDim;
                    double blockMax = Double.NEGATIVE_INFINITY;
                    for (int j = 0; j < n; j++) {
                        float s = AttentionMath.dot(qs, qOff, kv, j * kvWidth + h * (nope + vDim), nope)
                                + AttentionMath.dot(qs, qOff + nope, data, base + (blockStart + j) * latentWidth + lora,
                                        ropeDim);
                        scores[j] = s * spec.scale();
                        blockMax = Math.max(blockMax, scores[j]);
                    }
                    int stat = t * heads + h;
                    int outOff = stat * vDim;
                    double max = Math.max(runningMax[stat], blockMax);
                    double correction = Math.exp(runningMax[stat] - max); // 0 for the first block
                    if (correction != 1.0) {
                        runningSum[stat] *= correction;
                        for (int i = 0; i < vDim; i++) {
                            attended[outOff + i] = FloatMath.flushSubnormal((float) (attended[outOff + i] * correction));
                        }
                    }
                    for (int j = 0; j < n; j++) {
                        double e = Math.exp(scores[j] - max);
                        runningSum[stat] += e;
                        AttentionMath.axpy(FloatMath.flushSubnormal((float) e), kv, j * kvWidth + h * (nope + vDim)
                                + nope, attended, outOff, vDim);
                    }
                    runningMax[stat] = max;
                }
            });
        }
        for (int stat = 0; stat < tokens * heads; stat++) {
            float inv = (float) (1.0 / runningSum[stat]);
            for (int i = 0; i < vDim; i++) {
                attended[stat * vDim + i] = FloatMath.flushSubnormal(attended[stat * vDim + i] * inv);
            }
        }
        return attended;
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
