// Timing-only microbenchmark (not part of the engine): how fast can blocks shaped like model_attend_rows's (a block a
// row and kv head, 512 threads, a tile of 32 positions at a time through shared memory by cp.async) read a batch's
// float32 key/value cache, against the same bytes laid out a kv head at a time, deeper pipelines, and a plain
// stream? Rows: 64 sequences of P positions, 8 kv heads of 64; gpt-oss-20b's decode attention at batch 64.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o /tmp/kv_read tools/kv_read.cu && /tmp/kv_read [P]
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

constexpr int SEQS = 64, KV = 8, DIM = 64, TILE = 32, THREADS = 512;

__device__ __forceinline__ void cp16(void* dst, const void* src) {
    unsigned s = (unsigned) __cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
}

// HEADS_FIRST: cache [seq][kvh][k|v][position][DIM] (a tile is one run of keys and one of values); else the engine's
// [seq][position][k (KV * DIM) | v (KV * DIM)]. STAGES tiles in flight (the engine: 2).
template <bool HEADS_FIRST, int STAGES>
__global__ void __launch_bounds__(THREADS) attend_like(const float* __restrict__ cache, int positions,
                                                       float* __restrict__ sink) {
    extern __shared__ __align__(16) float tiles[];  // STAGES x (keys, values) x TILE x DIM
    const int t = blockIdx.x, kvh = blockIdx.y;
    const float* seq = cache + (size_t) t * positions * 2 * KV * DIM;
    const int quads = DIM / 4, tilesN = (positions + TILE - 1) / TILE;
    auto load = [&](int tile) {
        float* dst = tiles + (tile % STAGES) * 2 * TILE * DIM;
        int j = threadIdx.x / quads, c = (threadIdx.x % quads) * 4;  // 512 threads: 32 rows x 16 quads
        int p = tile * TILE + j;
        if (p < positions) {
            const float* k = HEADS_FIRST ? seq + ((size_t) kvh * 2 * positions + p) * DIM + c
                                         : seq + (size_t) p * 2 * KV * DIM + kvh * DIM + c;
            const float* v = HEADS_FIRST ? k + (size_t) positions * DIM : k + KV * DIM;
            cp16(dst + j * DIM + c, k);
            cp16(dst + TILE * DIM + j * DIM + c, v);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    for (int s = 0; s < STAGES - 1; s++) load(s);
    float acc = 0.f;
    for (int tile = 0; tile < tilesN; tile++) {
        load(tile + STAGES - 1);  // an empty group past the end keeps the count
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 1) : "memory");
        __syncthreads();
        const float* src = tiles + (tile % STAGES) * 2 * TILE * DIM;
        for (int i = threadIdx.x; i < 2 * TILE * DIM; i += THREADS) acc += src[i];
        __syncthreads();
    }
    if (acc == 1234.5f) sink[0] = acc;
}

__global__ void stream(const float4* __restrict__ p, size_t n, float* sink) {
    float acc = 0.f;
    for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t) gridDim.x * blockDim.x) {
        float4 v = __ldcs(p + i);
        acc += v.x + v.w;
    }
    if (acc == 1234.5f) sink[0] = acc;
}

template <typename F>
static float time(F launch) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 3; i++) launch();
    float best = 1e9f;
    for (int r = 0; r < 10; r++) {
        cudaEventRecord(a);
        launch();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        best = ms < best ? ms : best;
    }
    return best * 1e3f;  // microseconds
}

int main(int argc, char** argv) {
    int positions = argc > 1 ? atoi(argv[1]) : 512;
    size_t floats = (size_t) SEQS * positions * 2 * KV * DIM;
    double bytes = 4.0 * floats;
    float *cache, *sink;
    cudaMalloc(&cache, 4 * floats);
    cudaMalloc(&sink, 4);
    cudaMemset(cache, 0, 4 * floats);
    dim3 grid(SEQS, KV);
    printf("%d sequences x %d positions x %d kv heads of %d floats: %.1f MB of keys and values\n", SEQS, positions, KV,
           DIM, bytes / 1e6);
    auto row = [&](const char* what, float us) { printf("%-44s %8.1f us %7.0f GB/s\n", what, us, bytes / us / 1e3); };
    // 100 KB of shared memory a block whatever the stages use: two blocks a multiprocessor, as the engine's kernel
    // gets (its 64 registers a thread)
    int s2 = 100 * 1024, s4 = 100 * 1024;
    cudaFuncSetAttribute(attend_like<false, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, s2);
    cudaFuncSetAttribute(attend_like<true, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, s2);
    cudaFuncSetAttribute(attend_like<false, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, s4);
    cudaFuncSetAttribute(attend_like<true, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, s4);
    row("engine layout, 2 stages (the kernel's)",
        time([&] { attend_like<false, 2><<<grid, THREADS, s2>>>(cache, positions, sink); }));
    row("engine layout, 4 stages", time([&] { attend_like<false, 4><<<grid, THREADS, s4>>>(cache, positions, sink); }));
    row("a kv head at a time, 2 stages",
        time([&] { attend_like<true, 2><<<grid, THREADS, s2>>>(cache, positions, sink); }));
    row("a kv head at a time, 4 stages",
        time([&] { attend_like<true, 4><<<grid, THREADS, s4>>>(cache, positions, sink); }));
    row("plain stream of the same bytes",
        time([&] { stream<<<132 * 8, 512>>>((const float4*) cache, floats / 4, sink); }));
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 0;
}
