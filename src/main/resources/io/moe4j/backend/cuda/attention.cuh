// moe4j: what the attention kernels share (model_ops.cu, attend_tiles.cu, attend_latent_tiles.cu): the pass's tables,
// the visible span of a query, 16-byte asynchronous copies into shared memory, warp reductions.
#pragma once
#include "moe4j_common.cuh"

#define NEG_INF_F __int_as_float(0xff800000)  // no math headers under NVRTC

// The rows of a pass: token row t is at positions[t] (int64); the cache of the layer being run is at the device
// address caches[t] when perRow is set (rows of several sequences, a batched step) or caches[0] (every row of one
// sequence). The tables are data, so a decode step's launches are the same every step and replay from a graph.
// They are written by a copy before a pass's first kernel, never by a kernel: the kernels read them before waiting
// for the kernel ahead (through L2, as moe4j_common.cuh says), so that their latency hides behind its tail.
__device__ __forceinline__ float* row_cache(const unsigned long long* __restrict__ caches, int perRow, int t) {
    return (float*) load_l2((const long long*) caches + (perRow ? t : 0));
}

// The first key position a query at `position` sees: all (window 0), the last `window` (window > 0: sliding), or
// those of its own chunk of -window positions (window < 0: Llama-4's chunked attention).
__device__ __forceinline__ long long first_visible(long long position, int window) {
    if (window > 0) return position - window + 1 > 0 ? position - window + 1 : 0;
    if (window < 0) return position / (-window) * (-window);
    return 0;
}

// 16 bytes from global to shared memory without a register (cp.async, L2 only; sm_80+)
__device__ __forceinline__ void cp_async16(float* dst, const float* src) {
    unsigned d = (unsigned) __cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
}

__device__ __forceinline__ float warp_sum_f(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ long long warp_min_ll(long long v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w < v ? w : v;
    }
    return v;
}

__device__ __forceinline__ long long warp_max_ll(long long v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}
