/**
 * A small typed binding of the CUDA driver ({@code libcuda.so.1}) and NVRTC over the Foreign Function & Memory API:
 * method handles per function ({@link io.moe4j.backend.cuda.driver.CudaDriver},
 * {@link io.moe4j.backend.cuda.driver.Nvrtc}), AutoCloseable owners of device objects (context, module, buffer,
 * stream, event, graph), errors as {@link io.moe4j.backend.cuda.driver.CudaException} named by the library, and
 * {@link io.moe4j.backend.cuda.driver.CudaRuntime#probe()}, which says whether CUDA can run here and why not,
 * without throwing.
 */
package io.moe4j.backend.cuda.driver;
