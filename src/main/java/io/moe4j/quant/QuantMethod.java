package io.moe4j.quant;

import io.moe4j.config.MoeLayerConfig;
import io.moe4j.safetensors.Checkpoint;

import java.lang.foreign.Arena;
import java.util.List;

/**
 * One quantized-MoE method of the seeds (vLLM's FusedMoEMethodBase subclasses), Java-shaped: it validates its
 * configuration when constructed (a bad combination fails with the seed's message), names the tensors it needs,
 * and loads them into the canonical {@link ExpertWeights}, applying the seed's post-load rules.
 */
public interface QuantMethod {

    QuantScheme scheme();

    /** Every tensor the layer needs from the checkpoint, with dtype and shape, for inspect and load errors. */
    List<ExpectedTensor> expectedTensors(MoeLayerConfig layer);

    /**
     * Loads the layer's experts. Codes and scales stay packed; anything copied (fusing per-expert shards into
     * w13/w2) lives in {@code arena}. Fails with a message naming the tensor when one is missing or mis-shaped.
     */
    ExpertWeights load(Checkpoint checkpoint, MoeLayerConfig layer, LoadOptions options, Arena arena);
}
