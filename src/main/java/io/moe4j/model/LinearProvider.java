package io.moe4j.model;

import io.moe4j.backend.Workers;
import io.moe4j.config.ModelConfig;
import io.moe4j.model.linear.LinearFactory;
import io.moe4j.safetensors.Checkpoint;

/**
 * Where a model gets its linears from: one seam, so that the factory for quantized linears replaces the
 * unquantized one without touching the decoder. The factory runs its linears on the model's shared workers (not
 * closed by the factory).
 */
@FunctionalInterface
public interface LinearProvider {
    LinearFactory open(Checkpoint checkpoint, ModelConfig config, String backend, Workers workers);
}
