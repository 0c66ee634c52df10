/**
 * The decoder resident on the GPU ({@code ModelOptions} backend {@code cuda}): {@link io.moe4j.model.cuda.DeviceModel}
 * uploads a model's weights once (bf16 attention, embeddings and lm_head as stored; the experts packed by the cuda
 * backend) and {@link io.moe4j.model.cuda.DeviceSequence} runs a sequence with its KV cache and activations on the
 * device. The ops are {@link io.moe4j.backend.cuda.ModelOps} ({@code model_ops.cu}); the experts are the cuda
 * backend's, driven with device buffers. Families or layer kinds not yet on the device are refused by name.
 */
package io.moe4j.model.cuda;
