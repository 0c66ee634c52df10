package io.moe4j.bench.model;

import java.util.List;

/**
 * The checkpoint bytes one decode step (batch 1) reads, by part: the token's embedding row, every attention and
 * dense linear (the router and shared experts counted as dense), the top-k routed experts of each MoE layer, the
 * norm weights and lm_head. The KV cache's reads are left out: for the short contexts of the bench they are a few
 * hundred kilobytes a token.
 */
public record TokenBytes(long embeddingRow, long attention, long experts, long dense, long norms, long lmHead) {

    public long total() {
        return embeddingRow + attention + experts + dense + norms + lmHead;
    }

    /** The bytes a token reads in a model of shape {@code s} as {@link SyntheticModel} writes it. */
    public static TokenBytes of(ModelShape s) {
        return of(ModelTensors.shards(s), s);
    }

    static TokenBytes of(List<List<TensorSpec>> shards, ModelShape s) {
        long embedding = 0;
        long attention = 0;
        long experts = 0;
        long dense = 0;
        long norms = 0;
        long lmHead = 0;
        for (List<TensorSpec> shard : shards) {
            long layerExperts = 0;
            for (TensorSpec t : shard) {
                long b = t.bytes();
                switch (t.role()) {
                    case EMBEDDING -> embedding += b / s.vocab();
                    case ATTENTION -> attention += b;
                    case EXPERTS -> layerExperts += b;
                    case DENSE -> dense += b;
                    case NORM -> norms += b;
                    case LM_HEAD -> lmHead += b;
                }
            }
            // a shard is one layer; its experts all have the same tensors, so top-k of them read top-k / experts
            experts += layerExperts / s.experts() * s.topK();
        }
        return new TokenBytes(embedding, attention, experts, dense, norms, lmHead);
    }
}
