/**
 * The CUDA backend. {@link io.moe4j.backend.cuda.CudaBackend} runs a layer's whole experts stage on the GPU
 * (CudaExperts: routing plan on the host, then activation quantizers, the two grouped GEMMs, activation and
 * weighted combine on the device); it says "unsupported" with the probe's reason where there is no usable device.
 * {@link io.moe4j.backend.cuda.Mxfp4Gemv} holds the MXFP4 tensor-core grouped GEMV and its fragment-order
 * upload ({@link io.moe4j.backend.cuda.Mxfp4Stack} into {@link io.moe4j.backend.cuda.Mxfp4Tiles}). Kernels are
 * CUDA C resources beside these classes, compiled by NVRTC for the device in hand
 * ({@link io.moe4j.backend.cuda.KernelCompiler}, cached on disk). The benchmarks that time them (CudaGemvBench,
 * CudaExpertsBench, CudaRouterBench) live in the test tree; docs/cuda.md describes the design and the measurements
 * behind it.
 */
package io.moe4j.backend.cuda;
