// moe4j: helpers and the grouped-GEMV skeleton shared by the per-format kernels.
// Compiled at run time by NVRTC: no system headers, only built-in types and inline PTX.
#pragma once

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef unsigned long long u64;

// Rows of W each warp computes: a thread reuses the x values it holds in registers for all of them, which is
// what keeps shared-memory traffic well under the weight traffic. Overridable with -DMOE4J_ROWS=n.
#ifndef MOE4J_ROWS
#define MOE4J_ROWS 4
#endif
// Warps per block; with MOE4J_ROWS this sets the rows per block. Overridable with -DMOE4J_WARPS=n.
#ifndef MOE4J_WARPS
#define MOE4J_WARPS 8
#endif

// Overlapped launches (programmatic dependent launch, sm_90+). Kernels of a call's graph may be launched so that
// they start while the kernel before them is still running; such a kernel must call enter_after_prior_grid()
// before it reads anything an earlier kernel of the call wrote (or writes anything one reads): it waits for the
// kernel before, then lets the next one launch early in turn. Triggering only after the wait keeps the chain
// transitive: when a kernel's blocks start, the kernel two places before it has completed, so data written there
// (the call's routes and plan, by moe_copy_in, moe_route_plan or moe_router_select) may be read before the wait,
// through L2 (load_l2, __ldcg). Without an overlapped launch, or before sm_90, these are no-ops. Only kernels named
// in KernelSource.OVERLAP_READY are launched overlapped.
__device__ __forceinline__ void wait_prior_grid() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_next_grid() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void enter_after_prior_grid() {
    wait_prior_grid();
    allow_next_grid();
}

// The short kernels of a one-row decode step take `early` (set by the host per launch): they let the next kernel
// launch at their entry instead of after their wait, so that its blocks are resident and start what they may do
// before their own wait (a staged linear's weight copies) while this one still waits and runs. The kernel after an
// early one may start while the kernel two places before it still runs, so a kernel may read another's output before
// its wait only if some kernel between them triggers after its own wait: the down GEMV's routes and the activation's
// and combine's plan tables stay safe behind the first GEMM, which does. Batches pass 0: their dependents' waiting
// blocks held multiprocessors that the running kernel's many blocks needed.
__device__ __forceinline__ void allow_next_grid_if(int early) {
    if (early) allow_next_grid();
}

// Loads for data read before wait_prior_grid(): through L2 only. Until the wait, an SM's L1 may still hold lines an
// earlier call's kernels read at the same address (a replayed graph reuses its buffers), and those would be stale.
__device__ __forceinline__ int2 load_l2(const int2* p) {
    int2 v;
    asm volatile("ld.global.cg.v2.s32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ int load_l2(const int* p) {
    int v;
    asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ long long load_l2(const long long* p) {
    long long v;
    asm volatile("ld.global.cg.s64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ int4 load_l2(const int4* p) {
    int4 v;
    asm volatile("ld.global.cg.v4.s32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)
                 : "memory");
    return v;
}

// Two fp16 (low half, high half) to two floats. Exact for every fp16, subnormals included, which the 4-bit
// decoders below rely on.
__device__ __forceinline__ void half2_to_float2(u32 h, float& lo, float& hi) {
    asm("{ .reg .b16 l, h;\n\t mov.b32 {l, h}, %2;\n\t cvt.f32.f16 %0, l;\n\t cvt.f32.f16 %1, h; }"
        : "=f"(lo), "=f"(hi) : "r"(h));
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// x is staged in shared memory per 16-byte weight chunk: a chunk of EPC elements owns EPC/4 float4 slots. Lane l
// works on chunk base+l, so without a swizzle the 8 lanes of a 128-bit shared-memory phase would all read the same
// bank quad; XOR-ing the slot with chunk bits spreads them over all 8 quads.
template <int EPC>
__device__ __forceinline__ int x_slot(int chunk, int j) {
    constexpr int F = EPC / 4;                           // float4 slots per chunk: 8, 4 or 2
    constexpr int SHIFT = F == 8 ? 0 : (F == 4 ? 1 : 2); // log2(8 / F)
    return chunk * F + (j ^ ((chunk >> SHIFT) & (F - 1)));
}

// The routed grouped GEMV: for each pair p (one block row of the grid), out[p, n] = sum_k W[e_p, n, k] * x[r_p, k]
// where (e_p, r_p) = routes[p]. W is [E, N, C chunks of 16 bytes] (rows padded to whole chunks), Fmt says how a
// chunk decodes and where its scales are (scaleStride scale entries per row, groupChunks chunks per scale group). Each warp owns MOE4J_ROWS rows; its 32 lanes split the row's chunks (lane, lane+32, ...), each
// lane loading 16 bytes per row per step (coalesced: a warp reads 512 contiguous bytes of a row), with the next
// step's loads issued before the current step's math so that two steps of loads are in flight.
template <class Fmt>
__device__ __forceinline__ void grouped_gemv(const uint4* __restrict__ w, const void* __restrict__ scales,
                                             const float* __restrict__ x, const int2* __restrict__ routes,
                                             float* __restrict__ out, int N, int K, int C, int scaleStride,
                                             int groupChunks) {
    constexpr int R = MOE4J_ROWS;
    constexpr int EPC = Fmt::EPC;
    extern __shared__ float4 xs[];
    float* xsf = reinterpret_cast<float*>(xs);

    const int2 route = routes[blockIdx.y];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int row0 = (blockIdx.x * MOE4J_WARPS + warp) * R;

    // Rows past N are clamped for loading (always in bounds) and skipped when storing.
    size_t rowIndex[R];
#pragma unroll
    for (int r = 0; r < R; ++r) rowIndex[r] = (size_t)route.x * N + min(row0 + r, N - 1);

    // First step's weights go out before x is staged, so their latency overlaps the staging.
    int c = lane;
    uint4 q[R];
    u32 s[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (c < C) {
            q[r] = __ldg(w + rowIndex[r] * C + c);
            s[r] = Fmt::load_scale(scales, rowIndex[r], c, scaleStride, groupChunks);
        }
    }

    // Stage x, padded with zeros to whole chunks. Loads go out X_BATCH at a time before any is stored: issue is in
    // order, so a loop storing each load right away pays one L2 round trip per iteration.
    constexpr int X_BATCH = 4;
    const float* xrow = x + (size_t)route.y * K;
    if ((K & 3) == 0) { // rows are whole, aligned float4s: one 16-byte load per swizzled slot
        const float4* xv = reinterpret_cast<const float4*>(xrow);
        const int slots = C * EPC / 4;
        for (int b = threadIdx.x; b < slots; b += X_BATCH * blockDim.x) {
            float4 v[X_BATCH];
#pragma unroll
            for (int u = 0; u < X_BATCH; ++u) {
                const int i = b + u * blockDim.x;
                v[u] = 4 * i < K ? __ldg(xv + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < X_BATCH; ++u) {
                const int i = b + u * blockDim.x;
                if (i < slots) xs[x_slot<EPC>(i / (EPC / 4), i % (EPC / 4))] = v[u];
            }
        }
    } else {
        for (int b = threadIdx.x; b < C * EPC; b += X_BATCH * blockDim.x) {
            float v[X_BATCH];
#pragma unroll
            for (int u = 0; u < X_BATCH; ++u) {
                const int i = b + u * blockDim.x;
                v[u] = i < K ? __ldg(xrow + i) : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < X_BATCH; ++u) {
                const int i = b + u * blockDim.x;
                if (i < C * EPC) xsf[x_slot<EPC>(i / EPC, (i % EPC) >> 2) * 4 + (i & 3)] = v[u];
            }
        }
    }
    __syncthreads();
    if (row0 >= N) return;

    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;

    for (; c < C; c += 32) {
        const int cn = c + 32;
        uint4 qn[R];
        u32 sn[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            if (cn < C) {
                qn[r] = __ldg(w + rowIndex[r] * C + cn);
                sn[r] = Fmt::load_scale(scales, rowIndex[r], cn, scaleStride, groupChunks);
            }
        }
        float part[R];
#pragma unroll
        for (int r = 0; r < R; ++r) part[r] = 0.0f;
        Fmt::template word_dot<0>(q, xs, c, part);
        Fmt::template word_dot<1>(q, xs, c, part);
        Fmt::template word_dot<2>(q, xs, c, part);
        Fmt::template word_dot<3>(q, xs, c, part);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            acc[r] = Fmt::apply_chunk_scale(part[r], s[r], acc[r]);
            q[r] = qn[r];
            s[r] = sn[r];
        }
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
        const float total = warp_sum(acc[r]);
        if (lane == r && row0 + r < N) {
            out[(size_t)blockIdx.y * N + row0 + r] = total * Fmt::row_scale(scales, rowIndex[r]);
        }
    }
}
