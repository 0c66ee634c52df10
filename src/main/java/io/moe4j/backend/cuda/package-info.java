/**
 * The CUDA backend's kernels and their Java face. {@link io.moe4j.backend.cuda.CudaGroupedGemm} uploads an expert
 * stack once ({@link io.moe4j.backend.cuda.PackedExperts}, the checkpoint's packed bytes as MemorySegments, into a
 * {@link io.moe4j.backend.cuda.DeviceExperts}) and computes routed grouped GEMVs on it with float32 activations.
 * Kernels are CUDA C resources beside these classes, compiled by NVRTC for the device in hand
 * ({@link io.moe4j.backend.cuda.KernelCompiler}, cached on disk). {@link io.moe4j.backend.cuda.CudaGemvBench} times
 * them; NOTES.md in this directory records what was measured and why the kernels look as they do.
 */
package io.moe4j.backend.cuda;
