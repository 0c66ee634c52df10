package io.moe4j.model;

import io.moe4j.model.linear.Linear;

/**
 * DeepSeek-V3 multi-head latent attention. The cache holds, per position, the normalized compressed latent
 * [kv_lora_rank] and the rotated rope key [qk_rope_head_dim] shared by all heads; per-head keys and values are
 * expanded from the cached latents through kv_b_proj when attending, exactly as the reference computes them.
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

    /** With {@code qA} and {@code qANorm} null, {@code qB} is the plain q_proj (no query low-rank path). */
    public LatentAttention(MlaSpec spec, Linear qA, RmsNorm qANorm, Linear qB, Linear kvA, RmsNorm kvANorm, Linear kvB,
                           Linear o, Parallel parallel) {
        this.spec = spec;
        this.qA = qA;
        this.qANorm = qANorm;
        this.qB = qB;
        this.kvA = kvA;
        this.kvANorm = kvANorm;
        this.kvB = kvB;
        this.o = o;
        this.parallel = parallel;
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

        // Expand every cached latent into per-head keys (no-rope part) and values.
        int cached = cache.rows();
        float[] data = cache.data();
        int base = cache.offset(cache.first());
        float[] compressed = new float[cached * lora];
        for (int j = 0; j < cached; j++) {
            System.arraycopy(data, base + j * latentWidth, compressed, j * lora, lora);
        }
        int kvWidth = heads * (nope + vDim);
        float[] kv = new float[cached * kvWidth];
        kvB.forward(compressed, cached, kv);

        float[] attended = new float[tokens * heads * vDim];
        // Each head writes only its own slice of every row of `attended`.
        parallel.forEach(heads, (long) tokens * cached * (qkDim + vDim), h -> {
            float[] scores = new float[cached];
            for (int t = 0; t < tokens; t++) {
                long position = start + t;
                int n = (int) (position - cache.first() + 1);
                int qOff = (t * heads + h) * qkDim;
                for (int j = 0; j < n; j++) {
                    float s = FloatMath.dot(qs, qOff, kv, j * kvWidth + h * (nope + vDim), nope)
                            + FloatMath.dot(qs, qOff + nope, data, base + j * latentWidth + lora, ropeDim);
                    scores[j] = s * spec.scale();
                }
                FloatMath.softmax(scores, n, false, 0f);
                int outOff = (t * heads + h) * vDim;
                for (int j = 0; j < n; j++) {
                    FloatMath.axpy(scores[j], kv, j * kvWidth + h * (nope + vDim) + nope, attended, outOff, vDim);
                }
            }
        });
        float[] out = new float[tokens * o.outFeatures()];
        o.forward(attended, tokens, out);
        return out;
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
