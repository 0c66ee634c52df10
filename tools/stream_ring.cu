// Timing-only microbenchmark (not part of the engine): how fast do the decode GEMV's weights stream into the SMs by
// each way of moving them, with the MXFP4 GEMV's own grid, warp roles and weight layout and nothing else (each lane
// xors what it receives)? The question behind it (docs/log.md): the GEMVs that only stream through their per-lane
// cp.async rings ran at ~2/3 of copy bandwidth, below a plain read of the same bytes.
//   ldg    plain 16-byte loads, grid-strided over each expert's bytes (tools/stream_read.cu's floor)
//   ring   the GEMV's ring: per lane a 16-byte cp.async of codes and a 4-byte one of scales a block pair, warp ks of
//          a tile taking block pairs ks, ks + KSPLIT, ..., DEPTH stages
//   held   the same warp roles, codes loaded into registers HELD block pairs ahead (no shared memory)
//   bulk   each warp's block pairs contiguous, lane 0 moving CHUNK of them a stage (codes and scales) with
//          cp.async.bulk into a ring of DEPTH stages completed on mbarriers
// Layout as moe_repack_mxfp4_mma makes it: codes [E][NT][BP][32] uint4, scales [E][NT][BP][8] u32.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o /tmp/stream_ring tools/stream_ring.cu && /tmp/stream_ring
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>
typedef unsigned u32;

__device__ __forceinline__ u32 smem(const void* p) { return (u32)__cvta_generic_to_shared(p); }

__global__ void ldg(const uint4* __restrict__ codes, const int* __restrict__ experts, size_t per16, unsigned* sink) {
    unsigned acc = 0;
    const uint4* p = codes + (size_t)experts[blockIdx.y] * per16;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < per16; i += 4 * stride) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = __ldcs(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < per16; i += stride) { uint4 v = __ldcs(p + i); acc ^= v.x ^ v.w; }
    if (acc == 0x12345678u) sink[0] = acc;
}

template <int KSPLIT, int TILES, int DEPTH>
__global__ void __launch_bounds__(KSPLIT * TILES * 32)
ring(const uint4* __restrict__ codes, const u32* __restrict__ scales, const int* __restrict__ experts, int NT, int BP,
     unsigned* sink) {
    extern __shared__ char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2;
    const int tile = blockIdx.x * TILES + warp / KSPLIT, ks = warp % KSPLIT;
    const int iterations = tile < NT && ks < BP ? (BP - ks + KSPLIT - 1) / KSPLIT : 0;
    const size_t tileBase = ((size_t)experts[blockIdx.y] * NT + min(tile, NT - 1)) * BP;
    char* r = sm + warp * DEPTH * 640;
    const u32 codeRing = smem(r) + 16 * lane, scaleRing = smem(r + DEPTH * 512) + 4 * lane;
    const uint4* cn = codes + (tileBase + ks) * 32 + lane;
    const u32* sn = scales + (tileBase + ks) * 8 + g;
    auto issue = [&](int slot) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(codeRing + 512 * slot), "l"(cn) : "memory");
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(scaleRing + 128 * slot), "l"(sn) : "memory");
        cn += KSPLIT * 32;
        sn += KSPLIT * 8;
    };
#pragma unroll
    for (int d = 0; d < DEPTH - 1; ++d) {
        if (d < iterations) issue(d);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    unsigned acc = 0;
    for (int i = 0; i < iterations; ++i) {
        asm volatile("cp.async.wait_group %0;" ::"n"(DEPTH - 2) : "memory");
        const int slot = i % DEPTH;
        const uint4 q = *reinterpret_cast<const uint4*>(r + 512 * slot + 16 * lane);
        const u32 cs = *reinterpret_cast<const u32*>(r + DEPTH * 512 + 128 * slot + 4 * lane);
        if (i + DEPTH - 1 < iterations) issue((i + DEPTH - 1) % DEPTH);
        asm volatile("cp.async.commit_group;" ::: "memory");
        acc ^= q.x ^ q.y ^ q.z ^ q.w ^ cs;
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    if (acc == 0x12345678u) sink[0] = acc;
}

template <int KSPLIT, int TILES, int HELD>
__global__ void __launch_bounds__(KSPLIT * TILES * 32)
held(const uint4* __restrict__ codes, const u32* __restrict__ scales, const int* __restrict__ experts, int NT, int BP,
     unsigned* sink) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2;
    const int tile = blockIdx.x * TILES + warp / KSPLIT, ks = warp % KSPLIT;
    const int iterations = tile < NT && ks < BP ? (BP - ks + KSPLIT - 1) / KSPLIT : 0;
    const size_t tileBase = ((size_t)experts[blockIdx.y] * NT + min(tile, NT - 1)) * BP;
    const uint4* cn = codes + (tileBase + ks) * 32 + lane;
    const u32* sn = scales + (tileBase + ks) * 8 + g;
    unsigned acc = 0;
    for (int i = 0; i < iterations; i += HELD) {
        uint4 q[HELD];
        u32 s[HELD];
#pragma unroll
        for (int u = 0; u < HELD; ++u) {
            if (i + u < iterations) {
                q[u] = __ldcs(cn + (size_t)u * KSPLIT * 32);
                s[u] = __ldcs(sn + (size_t)u * KSPLIT * 8);
            } else {
                q[u] = make_uint4(0, 0, 0, 0);
                s[u] = 0;
            }
        }
#pragma unroll
        for (int u = 0; u < HELD; ++u) acc ^= q[u].x ^ q[u].y ^ q[u].z ^ q[u].w ^ s[u];
        cn += HELD * KSPLIT * 32;
        sn += HELD * KSPLIT * 8;
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

__device__ __forceinline__ void bar_init(u32 bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_expect(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk(u32 dst, const void* src, u32 bytes, u32 bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ void bar_wait(u32 bar, u32 parity) {
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}"
                 ::"r"(bar), "r"(parity) : "memory");
}

template <int KSPLIT, int TILES, int CHUNK, int DEPTH>
__global__ void __launch_bounds__(KSPLIT * TILES * 32)
bulkring(const uint4* __restrict__ codes, const u32* __restrict__ scales, const int* __restrict__ experts, int NT,
         int BP, unsigned* sink) {
    extern __shared__ __align__(128) char sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2;
    const int tile = blockIdx.x * TILES + warp / KSPLIT, ks = warp % KSPLIT;
    const int per = (BP + KSPLIT - 1) / KSPLIT;
    const int first = ks * per;
    const int pairs = tile < NT ? max(0, min(BP, first + per) - first) : 0;
    const int stages = (pairs + CHUNK - 1) / CHUNK;
    const size_t tileBase = ((size_t)experts[blockIdx.y] * NT + min(tile, NT - 1)) * BP + first;
    constexpr int SLOT = CHUNK * 544; // codes 512 a pair, then scales 32 a pair
    char* r = sm + 64 * KSPLIT * TILES + warp * DEPTH * SLOT;
    const u32 bars = smem(sm) + warp * 8 * DEPTH; // DEPTH <= 8
    if (lane == 0) {
        for (int d = 0; d < DEPTH; ++d) bar_init(bars + 8 * d);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncwarp();
    auto issue = [&](int s) {
        const int slot = s % DEPTH, n = min(CHUNK, pairs - s * CHUNK);
        const u32 bar = bars + 8 * slot, dst = smem(r + slot * SLOT);
        bar_expect(bar, n * 544);
        bulk(dst, codes + (tileBase + (size_t)s * CHUNK) * 32, n * 512, bar);
        bulk(dst + CHUNK * 512, scales + (tileBase + (size_t)s * CHUNK) * 8, n * 32, bar);
    };
    if (lane == 0)
        for (int s = 0; s < DEPTH && s < stages; ++s) issue(s);
    unsigned acc = 0;
    for (int s = 0; s < stages; ++s) {
        const int slot = s % DEPTH;
        bar_wait(bars + 8 * slot, (s / DEPTH) & 1);
        const char* p = r + slot * SLOT;
        const int n = min(CHUNK, pairs - s * CHUNK);
#pragma unroll
        for (int u = 0; u < CHUNK; ++u)
            if (u < n) {
                const uint4 q = *reinterpret_cast<const uint4*>(p + 512 * u + 16 * lane);
                const u32 cs = *reinterpret_cast<const u32*>(p + CHUNK * 512 + 32 * u + 4 * g);
                acc ^= q.x ^ q.y ^ q.z ^ q.w ^ cs;
            }
        __syncwarp();
        if (lane == 0 && s + DEPTH < stages) issue(s + DEPTH);
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

struct Shape { const char* name; int N, K, ksplit, tiles; };

template <typename F>
static double timeit(F launch, int calls) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int c = 0; c < 8; ++c) launch(c);
    cudaEventRecord(a);
    for (int c = 0; c < calls; ++c) launch(c);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); exit(1); }
    return ms * 1000.0 / calls;
}

template <int KS, int TL>
static void shape(const Shape& s, uint4* codes, u32* scales, int* ex, unsigned* sink) {
    const int NT = (s.N + 15) / 16, BP = (s.K + 63) / 64;
    const size_t perCodes = (size_t)NT * BP * 512, perScales = (size_t)NT * BP * 32;
    const double bytes = 4.0 * (perCodes + perScales);
    const dim3 grid((NT + TL - 1) / TL, 4), block(KS * TL * 32);
    const int calls = 64;
    auto report = [&](const char* what, double us) {
        printf("%-8s %-28s %7.2f us %6.0f GB/s\n", s.name, what, us, bytes / us / 1e3);
    };
    // Eight sets of four experts: call c reads set c % 8, so a set comes back after ~7 x 4 experts of other bytes.
    for (int bps : {2, 4})
        for (int threads : {256, 512}) {
            char name[64];
            snprintf(name, sizeof name, "ldg %d x %d", 132 * bps, threads);
            report(name, timeit([&](int c) {
                ldg<<<dim3(132 * bps / 4, 4), threads>>>(codes, ex + 4 * (c % 8), perCodes / 16, sink);
            }, calls));
        }
#define RING(D)                                                                                                  \
    {                                                                                                            \
        auto k = ring<KS, TL, D>;                                                                                \
        const int shm = KS * TL * D * 640;                                                                       \
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, shm);                               \
        report("ring d" #D, timeit([&](int c) { k<<<grid, block, shm>>>(codes, scales, ex + 4 * (c % 8), NT, BP, sink); }, calls)); \
    }
    RING(4) RING(6) RING(8)
#define HELD(H)                                                                                                  \
    {                                                                                                            \
        auto k = held<KS, TL, H>;                                                                                \
        report("held " #H, timeit([&](int c) { k<<<grid, block>>>(codes, scales, ex + 4 * (c % 8), NT, BP, sink); }, calls)); \
    }
    HELD(4) HELD(8)
#define BULK(C, D)                                                                                               \
    {                                                                                                            \
        auto k = bulkring<KS, TL, C, D>;                                                                         \
        const int shm = 64 * KS * TL + KS * TL * D * C * 544;                                                   \
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, shm);                               \
        report("bulk chunk " #C " depth " #D, timeit([&](int c) { k<<<grid, block, shm>>>(codes, scales, ex + 4 * (c % 8), NT, BP, sink); }, calls)); \
    }
    BULK(1, 4) BULK(2, 2) BULK(2, 3) BULK(2, 4) BULK(4, 2) BULK(4, 3) BULK(8, 2)
}

int main() {
    const int E = 32;
    // Sized for the larger matrix (gate_up: 5760 x 2880); down's experts use the first part of each expert's stride.
    const size_t perCodes = (size_t)360 * 45 * 512, perScales = (size_t)360 * 45 * 32;
    uint4* codes; u32* scales;
    cudaMalloc(&codes, perCodes * E);
    cudaMalloc(&scales, perScales * E);
    cudaMemset(codes, 1, perCodes * E);
    cudaMemset(scales, 1, perScales * E);
    int* ex; cudaMalloc(&ex, E * sizeof(int));
    int h[E]; for (int e = 0; e < E; ++e) h[e] = e;
    cudaMemcpy(ex, h, sizeof h, cudaMemcpyHostToDevice);
    unsigned* sink; cudaMalloc(&sink, 4);
    // gate_up: k2 t4 (the GEMV's choice at T = 1), down: k4 t2; down's experts lie in the same buffer at their own
    // stride.
    shape<2, 4>({"gate_up", 5760, 2880, 2, 4}, codes, scales, ex, sink);
    shape<4, 2>({"down", 2880, 2880, 4, 2}, codes, scales, ex, sink);
    size_t n = 1ull << 30; void *s, *d; cudaMalloc(&s, n); cudaMalloc(&d, n);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    cudaMemcpy(d, s, n, cudaMemcpyDeviceToDevice); cudaEventRecord(a);
    for (int c = 0; c < 10; ++c) cudaMemcpy(d, s, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b);
    printf("copy 1 GiB: %.0f GB/s read + written\n", 2.0 * n * 10 / (ms / 1e3) / 1e9);
    return 0;
}
