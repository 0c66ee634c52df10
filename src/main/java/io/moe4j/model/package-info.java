/**
 * Whole decoder-only models of the five MoE families, as transformers defines them, on the CPU backends.
 *
 * <p>Reading order: {@link io.moe4j.model.DecoderConfig} turns a hub {@code config.json} into one
 * {@link io.moe4j.model.LayerSpec} per layer (a {@link io.moe4j.model.GqaSpec} or {@link io.moe4j.model.MlaSpec}
 * attention, and a dense MLP or the layer's MoE block). {@link io.moe4j.model.Model#load} builds them:
 * {@link io.moe4j.model.GroupedQueryAttention} or {@link io.moe4j.model.LatentAttention} with their
 * {@link io.moe4j.model.Rope}, {@link io.moe4j.model.DenseMlp} or {@link io.moe4j.model.MoeFeedForward} (the layer
 * engine's {@link io.moe4j.layer.MoeLayer}), the final {@link io.moe4j.model.RmsNorm} and lm_head. Every projection
 * comes from one {@link io.moe4j.model.LinearProvider}. A {@link io.moe4j.model.Session} runs one sequence and holds
 * its {@link io.moe4j.model.KvBuffer} per layer.
 *
 * <p>Numerics: float32 throughout, with norms' and softmax's sums in double; subnormal operands are flushed to zero.
 */
package io.moe4j.model;
