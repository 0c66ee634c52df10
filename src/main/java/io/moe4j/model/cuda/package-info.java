/**
 * The decoder resident on the GPU ({@code ModelOptions} backend {@code cuda}), every family of the host decoder:
 * {@link io.moe4j.model.cuda.DeviceModel} uploads a model's weights once in the checkpoint's formats (dense linears as
 * {@link io.moe4j.backend.cuda.DeviceLinear}s, the experts packed by the cuda backend);
 * {@link io.moe4j.model.cuda.DevicePass} holds the launches of a forward pass, which
 * {@link io.moe4j.model.cuda.DeviceSequence} (one sequence with its KV cache) and
 * {@link io.moe4j.model.cuda.DeviceBatch} (several in one step) share. The ops are
 * {@link io.moe4j.backend.cuda.ModelOps} ({@code model_ops.cu}); the experts are the cuda backend's, driven with device
 * buffers. What the device kernels cannot take (heads wider than its attention, a format the device cannot decode) is
 * refused by name at load.
 */
package io.moe4j.model.cuda;
