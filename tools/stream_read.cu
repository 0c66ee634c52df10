// Timing-only microbenchmark (not part of the engine): how fast can one kernel that only reads, nothing else, take in
// 4 (or 2) experts' worth of bytes from a 32-expert buffer, cold in L2 (consecutive launches read other experts)?
// The floor for the decode GEMVs at gpt-oss-20b's sizes (gate_up 4 x 8.8 MB, down 4 x 4.4 MB); docs/log.md (cuda kernels).
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o /tmp/stream_read tools/stream_read.cu && /tmp/stream_read
// An argument sets the bytes per expert (default 8808960, gate_up): 13213440 is gate_up + down, a whole T = 1 call.
// The last lines time whole host calls of the best grid (launch, then synchronize, wall clock): the floor for any
// layer driven from the host once per call, before it moves its input and output.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__global__ void readk(const uint4* __restrict__ base, const int* __restrict__ experts, size_t perExpert16,
                      unsigned* sink) {
    // grid.y = the routed expert; grid.x blocks stride over its bytes, 4 loads in flight per thread
    unsigned acc = 0;
    const uint4* p = base + (size_t)experts[blockIdx.y] * perExpert16;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < perExpert16; i += 4 * stride) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = __ldcs(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < perExpert16; i += stride) { uint4 v = __ldcs(p + i); acc ^= v.x ^ v.w; }
    if (acc == 0x12345678u) sink[0] = acc;
}
int main(int argc, char** argv) {
    const size_t perExpert = argc > 1 ? strtoull(argv[1], nullptr, 10) : 8808960; // gate_up MXFP4 expert, ~8.8 MB
    const int E = 32;
    uint4* buf; cudaMalloc(&buf, perExpert * E); cudaMemset(buf, 1, perExpert * E);
    // Eight sets of four experts, 0-3, 4-7, ...: call c reads set c % 8, so a set comes back after 282 MB of others.
    int* ex; cudaMalloc(&ex, E * sizeof(int));
    int h[E]; for (int e = 0; e < E; ++e) h[e] = e;
    cudaMemcpy(ex, h, sizeof(h), cudaMemcpyHostToDevice);
    unsigned* sink; cudaMalloc(&sink, 4);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    double bestUs = 1e30; int bestThreads = 0, bestBlocks = 0;
    for (int nexp : {4, 2}) for (double frac : {1.0, 0.5}) for (int threads : {256, 512, 1024}) for (int bps : {1, 2, 4, 8}) {
        size_t per16 = (size_t)(perExpert * frac) / 16;
        int blocks = 132 * bps;
        for (int w = 0; w < 3; ++w) readk<<<dim3(blocks / nexp, nexp), threads>>>(buf, ex + 4 * (w % 8), per16, sink);
        const int N = 64;
        cudaEventRecord(a);
        for (int c = 0; c < N; ++c) readk<<<dim3(blocks / nexp, nexp), threads>>>(buf, ex + 4 * (c % 8), per16, sink);
        cudaEventRecord(b); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b);
        double us = ms * 1000 / N, bytes = per16 * 16.0 * nexp;
        printf("experts %d x %.1f MB  grid %4d x %4d: %6.2f us  %6.0f GB/s\n", nexp, per16 * 16 / 1e6, blocks, threads, us, bytes / us / 1e3);
        if (nexp == 4 && frac == 1.0 && us < bestUs) { bestUs = us; bestThreads = threads; bestBlocks = blocks; }
    }
    // Whole host calls of the best 4-expert grid: launch, synchronize, wall clock; median and best of 400.
    std::vector<double> wall;
    const size_t per16 = perExpert / 16;
    for (int c = 0; c < 440; ++c) {
        auto t0 = std::chrono::steady_clock::now();
        readk<<<dim3(bestBlocks / 4, 4), bestThreads>>>(buf, ex + 4 * (c % 8), per16, sink);
        cudaStreamSynchronize(0);
        auto t1 = std::chrono::steady_clock::now();
        if (c >= 40) wall.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(wall.begin(), wall.end());
    printf("host calls, experts 4 x %.1f MB, grid %d x %d: median %.2f us, best %.2f us (back to back: %.2f us)\n",
           per16 * 16 / 1e6, bestBlocks, bestThreads, wall[wall.size() / 2], wall[0], bestUs);
    // copy bandwidth (read + written) on 1 GiB
    size_t n = 1ull << 30; void *s, *d; cudaMalloc(&s, n); cudaMalloc(&d, n);
    cudaMemcpy(d, s, n, cudaMemcpyDeviceToDevice); cudaEventRecord(a);
    for (int c = 0; c < 10; ++c) cudaMemcpy(d, s, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b);
    printf("copy 1 GiB: %.0f GB/s read + written\n", 2.0 * n * 10 / (ms / 1e3) / 1e9);
    return 0;
}
