// Timing-only microbenchmark (not part of the engine): how short can a gpt-oss-20b batch-1 decode step be on this
// GPU, by the shape of the step, with the engine's arithmetic left out? The step's bytes are read with plain 16-byte
// loads (24 layers of q|k|v 29.5 MB, o 23.6 MB, router 0.18 MB, gate_up 35.2 MB, down 17.6 MB, then lm_head
// 1.16 GB: 3.71 GB), and each of a layer's short steps (norm, position, attention, selection, activation, combine)
// is one block's pass over a 2880-float row (a sum of squares, then the row scaled), read from the step before and
// written for the step after, so that every step waits for the one before it, as in the model.
//   read      one kernel reading all the bytes, no steps: the read bandwidth
//   chain     one kernel a step (the engine's shape): launched with programmatic stream serialization, every kernel
//             letting the next launch once it has waited, the big ones loading their first 64 bytes a thread before
//             waiting (as the engine's GEMVs do); captured in one graph, replayed. Also with the reads alone, with
//             the short steps alone, and with only 3 or 2 of a layer's 6 short steps (the others taken, for free,
//             into a neighbour: what a deeper fusion could reach at best)
//   persist   one cooperative kernel for the whole step, a block a multiprocessor: a grid barrier (arrival counter,
//             generation word) after each big read, the block arriving last running the short steps that follow it
//             before releasing the others; "ahead": the waiting blocks first copy up to that many bytes of their
//             share of the next read into shared memory (cp.async) when that read may start (all but gate_up, whose
//             experts the selection decides). Also with the reads alone and the short steps alone
// Each is replayed 15 times after warm-up; printed: the median step, its bytes over that time, and the ratio to the
// copy bandwidth (a 2 GiB device-to-device copy, bytes read plus written, as moe bench measures it).
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o /tmp/step_floor tools/step_floor.cu && /tmp/step_floor
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#include "cuda_check.h"

constexpr int ROW = 2880;
constexpr int THREADS = 512;
constexpr int REPS = 15;

struct Phase {
    long long off16; // first uint4 of a big read; -1 for a short step
    long long n16;   // uint4s read
};

__device__ __forceinline__ void wait_prior() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void launch_next() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// One block's short step: in -> out scaled by the row's inverse root mean square.
__device__ void short_step(const float* in, float* out, float* red) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < ROW; i += blockDim.x) {
        const float v = __ldcg(in + i);
        s = fmaf(v, v, s);
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
        if (threadIdx.x == 0) red[32] = rsqrtf(t / ROW + 1e-5f);
    }
    __syncthreads();
    const float r = red[32];
    for (int i = threadIdx.x; i < ROW; i += blockDim.x) __stcg(out + i, __ldcg(in + i) * r + 1.0f);
    __syncthreads();
}

// The share [begin, end) of a big read taken by one block: its uint4s xor-ed together, plus the input row.
__device__ unsigned stream_share(const uint4* __restrict__ w, long long begin, long long end, unsigned acc) {
    long long i = begin + threadIdx.x;
    const int stride = blockDim.x;
    for (; i + 7 * stride < end; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = __ldcs(w + i + u * stride);
#pragma unroll
        for (int u = 0; u < 8; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < end; i += stride) {
        const uint4 v = __ldcs(w + i);
        acc ^= v.x ^ v.w;
    }
    return acc;
}

__global__ void read_all(const uint4* __restrict__ w, long long n16, unsigned* sink) {
    const long long per = (n16 + gridDim.x - 1) / gridDim.x;
    const long long b = blockIdx.x * per;
    const unsigned acc = stream_share(w, b, min(n16, b + per), 0u);
    if (acc == 0x12345678u) sink[0] = acc;
}

// chain: a short step kernel and a big read kernel.
__global__ void chain_short(const float* in, float* out) {
    __shared__ float red[33];
    wait_prior();
    launch_next();
    short_step(in, out, red);
}

__global__ void chain_big(const uint4* __restrict__ w, long long n16, const float* in, float* out, unsigned* sink) {
    const long long per = (n16 + gridDim.x - 1) / gridDim.x;
    const long long b = blockIdx.x * per, e = min(n16, b + per);
    uint4 first[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const long long i = b + threadIdx.x + (long long)u * blockDim.x;
        first[u] = i < e ? __ldcs(w + i) : make_uint4(0, 0, 0, 0);
    }
    wait_prior();
    launch_next();
    unsigned acc = __float_as_uint(__ldcg(in + threadIdx.x % ROW));
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= first[u].x ^ first[u].w;
    acc = stream_share(w, b + 4LL * blockDim.x, e, acc);
    if (acc == 0x12345678u) sink[0] = acc;
    if (blockIdx.x == 0) {
        for (int i = threadIdx.x; i < ROW; i += blockDim.x) __stcg(out + i, __ldcg(in + i) + 0.5f);
    }
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// persist: one barrier a big read; the block that arrives last at it runs the short steps that follow that read
// (back to back, no barrier between them) and then releases the others; blocks waiting at a barrier first copy
// ahead up to ahead16 uint4s of their share of the next big read when that read may start (all but gate_up, whose
// experts the selection, a short step, decides).
struct Group {
    long long off16, n16; // the big read (n16 0: none)
    int shorts;           // short steps after it
    int aheadOk;          // whether the NEXT group's big read may be copied ahead while this group's shorts run
};

template <int NT>
__global__ void __launch_bounds__(NT, 1)
persist(const uint4* __restrict__ w, const Group* __restrict__ groups, int count, float* rows, unsigned* barrier,
         unsigned* sink, long long ahead16) {
    extern __shared__ uint4 stage[];
    __shared__ float red[33];
    __shared__ int last;
    unsigned* arrivals = barrier;
    unsigned* gen = barrier + 1;
    unsigned mine = ld_acquire(gen);
    unsigned acc = 0;
    int row = 0;
    bool staged = false;
    for (int g = 0; g < count; ++g) {
        const Group gr = groups[g];
        const long long per = (gr.n16 + gridDim.x - 1) / gridDim.x;
        const long long b = blockIdx.x * per, e = min(gr.n16, b + per);
        long long from = b;
        if (staged) {
            asm volatile("cp.async.wait_all;" ::: "memory");
            __syncthreads();
            const long long len = min(max(e - b, 0LL), ahead16);
            for (long long i = threadIdx.x; i < len; i += blockDim.x) acc ^= stage[i].x ^ stage[i].w;
            from = b + len;
            __syncthreads();
            staged = false;
        }
        if (gr.n16 > 0) {
            acc ^= __float_as_uint(__ldcg(rows + row * ROW + threadIdx.x % ROW));
            acc = stream_share(w + gr.off16, from, max(from, e), acc);
        }
        // Arrive.
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            last = atomicAdd(arrivals, 1u) == gridDim.x - 1;
        }
        __syncthreads();
        if (last) {
            if (threadIdx.x == 0) *arrivals = 0;
            for (int k = 0; k < gr.shorts; ++k) {
                short_step(rows + row * ROW, rows + (row ^ 1) * ROW, red);
                row ^= 1;
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence();
                atomicExch(gen, mine + 1);
            }
        } else {
            row ^= gr.shorts & 1;
            if (ahead16 > 0 && gr.aheadOk && g + 1 < count) {
                const Group n = groups[g + 1];
                const long long np = (n.n16 + gridDim.x - 1) / gridDim.x;
                const long long nb = blockIdx.x * np, len = min(max(min(np, n.n16 - nb), 0LL), ahead16);
                for (long long i = threadIdx.x; i < len; i += blockDim.x) {
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(stage + i)),
                                 "l"(w + n.off16 + nb + i)
                                 : "memory");
                }
                asm volatile("cp.async.commit_group;" ::: "memory");
                staged = true;
            }
            if (threadIdx.x == 0) {
                while (ld_acquire(gen) == mine) {
                }
            }
        }
        ++mine;
        __syncthreads();
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main() {
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));

    // The step: a layer's big reads and short steps, 24 layers, then the last norm and lm_head.
    const long long qkv = 29491200, o = 23592960, router = 184320, gateUp = 35233920, down = 17616960;
    const long long lmHead = 201088LL * 2880 * 2;
    // keep: which of a layer's short steps are steps of their own (the rest taken into a neighbour, for free).
    enum { NORM = 1, POSITION = 2, ATTENTION = 4, SELECTION = 8, ACTIVATION = 16, COMBINE = 32, ALL = 63 };
    long long off = 0;
    auto build = [&](int keep) {
        std::vector<Phase> steps;
        off = 0;
        auto big = [&](long long bytes) {
            steps.push_back({off / 16, bytes / 16});
            off += (bytes + 255) / 256 * 256;
        };
        auto small = [&](int which) {
            if (keep & which) steps.push_back({-1, 0});
        };
        for (int l = 0; l < 24; ++l) {
            small(NORM);
            big(qkv);
            small(POSITION);
            small(ATTENTION);
            big(o);
            big(router); // with the post-attention norm
            small(SELECTION);
            big(gateUp);
            small(ACTIVATION);
            big(down);
            small(COMBINE);
        }
        small(NORM);
        big(lmHead);
        return steps;
    };
    const std::vector<Phase> phases = build(ALL);
    const long long total = off;
    // The same step as groups for persist: each big read and the short steps after it; the first group has no read.
    std::vector<Group> groups;
    groups.push_back({0, 0, 0, 1});
    for (size_t p = 0; p < phases.size(); ++p) {
        if (phases[p].off16 < 0) {
            groups.back().shorts++;
        } else {
            groups.push_back({phases[p].off16, phases[p].n16, 0, 1});
        }
    }
    // gate_up's experts come from the selection: no copying ahead of it while the selection runs.
    for (size_t g = 0; g + 1 < groups.size(); ++g) {
        if (groups[g + 1].n16 == gateUp / 16) groups[g].aheadOk = 0;
    }
    printf("# %s, %d SMs; step of %zu steps reading %.1f MB\n", prop.name, sms, phases.size(), total / 1e6);

    uint4* w;
    CHECK(cudaMalloc(&w, total));
    CHECK(cudaMemset(w, 0x5A, total));
    float* rows;
    CHECK(cudaMalloc(&rows, 2 * ROW * sizeof(float)));
    CHECK(cudaMemset(rows, 0, 2 * ROW * sizeof(float)));
    unsigned *sink, *barrier;
    CHECK(cudaMalloc(&sink, 64));
    CHECK(cudaMalloc(&barrier, 64));
    CHECK(cudaMemset(barrier, 0, 64));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    auto timed = [&](auto&& body) {
        std::vector<float> ms;
        for (int r = -3; r < REPS; ++r) {
            CHECK(cudaEventRecord(a, s));
            body();
            CHECK(cudaEventRecord(b, s));
            CHECK(cudaEventSynchronize(b));
            float t;
            CHECK(cudaEventElapsedTime(&t, a, b));
            if (r >= 0) ms.push_back(t);
        }
        return median(ms) * 1000.0f; // µs
    };

    // Copy bandwidth: 2 GiB device to device, bytes read plus written.
    const size_t copyBytes = 2ull << 30;
    void *c0, *c1;
    CHECK(cudaMalloc(&c0, copyBytes));
    CHECK(cudaMalloc(&c1, copyBytes));
    CHECK(cudaMemset(c0, 0x5A, copyBytes));
    const float copyUs = timed([&] { CHECK(cudaMemcpyAsync(c1, c0, copyBytes, cudaMemcpyDeviceToDevice, s)); });
    const double copyGBs = 2.0 * copyBytes / copyUs / 1e3;
    CHECK(cudaFree(c0));
    CHECK(cudaFree(c1));
    printf("copy bandwidth %.0f GB/s\n", copyGBs);
    auto report = [&](const char* name, float us) {
        printf("%-66s %8.1f us a step  %6.0f GB/s  %.3f of copy bandwidth\n", name, us, total / us / 1e3,
               total / us / 1e3 / copyGBs);
    };

    report("read, 4 blocks of 512 a multiprocessor", timed([&] { read_all<<<sms * 4, 512, 0, s>>>(w, total / 16, sink); }));
    report("read, 1 block of 1024", timed([&] { read_all<<<sms, 1024, 0, s>>>(w, total / 16, sink); }));

    // chain: the steps captured once as a graph of kernels, replayed.
    auto chain = [&](const char* name, const std::vector<Phase>& steps) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr.val.programmaticStreamSerializationAllowed = 1;
        for (size_t p = 0; p < steps.size(); ++p) {
            const float* in = rows + (p & 1) * ROW;
            float* out = rows + ((p + 1) & 1) * ROW;
            cudaLaunchConfig_t cfg = {};
            cfg.stream = s;
            cfg.attrs = &attr;
            cfg.numAttrs = 1;
            cfg.blockDim = dim3(THREADS);
            if (steps[p].off16 < 0) {
                cfg.gridDim = dim3(1);
                CHECK(cudaLaunchKernelEx(&cfg, chain_short, in, out));
            } else {
                const long long n16 = steps[p].n16;
                const int blocks = (int)std::min<long long>(sms * 4, (n16 + 8 * THREADS - 1) / (8 * THREADS));
                cfg.gridDim = dim3(blocks);
                CHECK(cudaLaunchKernelEx(&cfg, chain_big, (const uint4*)(w + steps[p].off16), n16, in, out, sink));
            }
        }
        CHECK(cudaStreamEndCapture(s, &graph));
        CHECK(cudaGraphInstantiate(&exec, graph, 0));
        report(name, timed([&] { CHECK(cudaGraphLaunch(exec, s)); }));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(graph));
    };
    std::vector<Phase> bigOnly, shortOnly;
    for (const Phase& p : phases) (p.off16 < 0 ? shortOnly : bigOnly).push_back(p);
    chain("chain", phases);
    chain("chain, reads only", bigOnly);
    chain("chain, short steps only", shortOnly);
    chain("chain, 3 short steps a layer (attention, selection, activation)", build(ATTENTION | SELECTION | ACTIVATION));
    chain("chain, 2 short steps a layer (attention, selection)", build(ATTENTION | SELECTION));

    // persist: one cooperative kernel a step, over groups.
    auto persistent = [&](const char* what, const std::vector<Group>& gs, int threads, int kb) {
        Group* dgroups;
        CHECK(cudaMalloc(&dgroups, gs.size() * sizeof(Group)));
        CHECK(cudaMemcpy(dgroups, gs.data(), gs.size() * sizeof(Group), cudaMemcpyHostToDevice));
        const int gcount = (int)gs.size();
        const int shared = kb * 1024;
        const void* kernel = threads == 1024 ? (const void*)persist<1024> : (const void*)persist<512>;
        CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, std::max(shared, 1024)));
        const long long ahead16 = shared / 16;
        void* args[] = {&w, &dgroups, (void*)&gcount, &rows, &barrier, &sink, (void*)&ahead16};
        char name[64];
        snprintf(name, sizeof name, "persist %d threads, ahead %d KB%s", threads, kb, what);
        report(name, timed([&] {
                   CHECK(cudaLaunchCooperativeKernel(kernel, dim3(sms), dim3(threads), args, shared, s));
               }));
        CHECK(cudaFree(dgroups));
    };
    persistent("", groups, 512, 0);
    for (int kb : {0, 64, 128}) persistent("", groups, 1024, kb);
    std::vector<Group> noShorts = groups, noReads = groups;
    for (Group& g : noShorts) g.shorts = 0;
    for (Group& g : noReads) g.n16 = 0;
    persistent(", reads only", noShorts, 1024, 0);
    persistent(", short steps only", noReads, 1024, 0);
    CHECK(cudaDeviceSynchronize());
    return 0;
}
