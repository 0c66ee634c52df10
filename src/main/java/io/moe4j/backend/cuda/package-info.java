/**
 * The CUDA backend. {@link io.moe4j.backend.cuda.CudaBackend} runs a layer's whole experts stage on the GPU
 * (CudaExperts: routing plan on the host, then activation quantizers, the two grouped GEMMs, activation and
 * weighted combine on the device); it says "unsupported" with the probe's reason where there is no usable device.
 * {@link io.moe4j.backend.cuda.CudaGroupedGemm} holds the MXFP4 grouped GEMV and its fragment-order upload
 * ({@link io.moe4j.backend.cuda.PackedExperts} into {@link io.moe4j.backend.cuda.DeviceExperts}). Kernels are CUDA C
 * resources beside these classes, compiled by NVRTC for the device in hand
 * ({@link io.moe4j.backend.cuda.KernelCompiler}, cached on disk). {@link io.moe4j.backend.cuda.CudaGemvBench} and
 * {@link io.moe4j.backend.cuda.CudaExpertsBench} time them; NOTES.md in this directory records what was measured and
 * why the kernels look as they do.
 */
package io.moe4j.backend.cuda;
