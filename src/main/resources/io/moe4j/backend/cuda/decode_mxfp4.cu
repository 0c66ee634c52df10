// moe4j: a decode call's whole experts stage on MXFP4 weights in one persistent kernel: gate_up GEMV, bias and
// activation, down GEMV, then bias, router weights and the sum over each token's choices.
//
// Why one kernel: at T = 1 the stage's four kernels each paid a ramp and a tail in which HBM idled (the down GEMV
// alone ran at ~56% of copy bandwidth, NOTES.md), and the weights of the down GEMV, which do not depend on the
// gate_up result, could not start streaming before it ended. Here the grid is one block per SM, all resident at
// once (cooperative launch), and three grid barriers separate the phases:
//   A  gate_up GEMV  -> partial sums          (the first stages of C's weights go out before the barrier)
//   B  bias + activation per element, float64 -> act rows
//   C  down GEMV     -> partial sums
//   D  bias, router weight, float64 sum over choices in choice order -> out
// Each GEMV phase cuts the flat list of its (pair, 16-row tile, 64-element block pair) stages, 640 bytes of weights
// each, into equal contiguous ranges, one per warp: every warp streams the same bytes, so no SM waits on an uneven
// share of whole tiles. A tile cut between warps leaves up to DEC_SEGMENTS partial sums, which the next phase adds
// in warp order: the result does not depend on timing.
//
// The weights are the fragment-order tiles of gemv_mxfp4_mma.cu (decode_word, the per-lane uint4 of a block pair,
// E8M0 scale words) and the main loop is that kernel's: a per-warp cp.async ring, x as two fp16 parts (hi, lo) in
// B columns 0 and 2 after scaling each x row by a power of two, mma.sync m16n8k16, per-block E8M0 scaling in float32.
#include "mxfp4_mma.cuh"
#include "moe4j_quant.cuh"

#ifndef DEC_WARPS
#define DEC_WARPS 16
#endif
#ifndef DEC_DEPTH
#define DEC_DEPTH 4
#endif
// Most warps whose ranges share one tile; the host caps the warps of a phase so that no tile is cut more often.
#define DEC_SEGMENTS 4
// Most pairs of a call (the block keeps their experts in shared memory).
#define DEC_MAX_PAIRS 32
#define DEC_XB_STEP 8
// Choices of a token whose loads the combine issues together.
#define DEC_COMBINE_BATCH 8

// The warp whose range holds stage s when `stages` are cut into `warps` ranges [w * stages / warps, ...).
__device__ __forceinline__ int warp_of(long long stages, int warps, long long s) {
    return (int)(((s + 1) * warps - 1) / stages);
}

__device__ __forceinline__ long long range_start(long long stages, int warps, int w) {
    return (long long)min(w, warps) * stages / warps;
}

// Where a warp's stage list stands: pair, row tile, block pair.
struct Cursor {
    int p, rt, bp;
    __device__ __forceinline__ void advance(int NT, int BP) {
        if (++bp == BP) {
            bp = 0;
            if (++rt == NT) {
                rt = 0;
                ++p;
            }
        }
    }
};

__device__ __forceinline__ Cursor cursor_at(long long s, int NT, int BP) {
    Cursor c;
    c.p = (int)(s / ((long long)NT * BP));
    const int rest = (int)(s - (long long)c.p * NT * BP);
    c.rt = rest / BP;
    c.bp = rest - c.rt * BP;
    return c;
}

// A row tile's partial sums in `part`: [pair * NT + tile][DEC_SEGMENTS][16] floats, then per tile the number of
// segments written (int). A row's value is the sum of its tile's segments in warp order. All five loads go out at
// once (the slots past the count are read but not added): one memory round trip, not a chain.
__device__ __forceinline__ float row_sum(const float* part, int tiles, int NT, int p, int row) {
    const int tile = p * NT + (row >> 4);
    const float* at = part + (size_t)tile * DEC_SEGMENTS * 16 + (row & 15);
    const int segments = __ldcg(reinterpret_cast<const int*>(part + (size_t)tiles * DEC_SEGMENTS * 16) + tile);
    float v[DEC_SEGMENTS];
#pragma unroll
    for (int s = 0; s < DEC_SEGMENTS; ++s) v[s] = __ldcg(at + 16 * s);
    float sum = v[0];
#pragma unroll
    for (int s = 1; s < DEC_SEGMENTS; ++s) sum += s < segments ? v[s] : 0.0f;
    return sum;
}

__device__ __forceinline__ void grid_barrier(unsigned* counter, unsigned target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(counter, 1u);
        unsigned seen;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
        } while (seen < target);
    }
    __syncthreads();
}

// After the last barrier: the block that leaves last sets the counter back to zero for the next call (every block
// has passed the barrier's wait by then: each adds once more only after it).
__device__ __forceinline__ void reset_barrier(unsigned* counter, unsigned passes) {
    if (threadIdx.x == 0 && atomicAdd(counter, 1u) == (passes + 1) * gridDim.x - 1) atomicExch(counter, 0u);
}

// One GEMV phase's shape and this warp's share of it.
struct Phase {
    const uint4* codes;
    const u32* scales;
    int NT, BP, K;
    long long stages;
    int warps;           // warps that take a range (the others only join the barriers)
    long long a, b;      // this warp's stages [a, b)
    int pFirst, pCount;  // pairs this block's ranges touch
};

__device__ __forceinline__ Phase make_phase(const uint4* codes, const u32* scales, int NT, int BP, int K, int pairs,
                                            int warps) {
    Phase ph;
    ph.codes = codes;
    ph.scales = scales;
    ph.NT = NT;
    ph.BP = BP;
    ph.K = K;
    ph.stages = (long long)pairs * NT * BP;
    ph.warps = warps;
    const int gw = blockIdx.x * DEC_WARPS + (threadIdx.x >> 5);
    ph.a = range_start(ph.stages, warps, gw);
    ph.b = range_start(ph.stages, warps, gw + 1);
    const long long first = range_start(ph.stages, warps, blockIdx.x * DEC_WARPS);
    const long long end = range_start(ph.stages, warps, (blockIdx.x + 1) * DEC_WARPS);
    const long long perPair = (long long)NT * BP;
    ph.pFirst = (int)(first / perPair);
    ph.pCount = end > first ? (int)((end - 1) / perPair) - ph.pFirst + 1 : 0;
    return ph;
}

__device__ __forceinline__ void issue_at(const Phase& ph, const int* sExpert, Cursor c, u32 codeSlot, u32 scaleSlot,
                                         int lane) {
    const size_t tb = ((size_t)sExpert[c.p] * ph.NT + c.rt) * ph.BP + c.bp;
    issue_stage(codeSlot, scaleSlot, ph.codes + tb * 32 + lane, ph.scales + tb * 8 + (lane >> 2));
}

// The ring's first S - 1 stages of this warp's range (each commits a group, empty or not, so that "stage i has
// landed" is always wait_group(S - 2)). Returns the cursor of the next stage to issue.
__device__ __forceinline__ Cursor prime_ring(const Phase& ph, const int* sExpert, char* ring, int lane) {
    constexpr int S = DEC_DEPTH;
    const u32 codeRing = smem_address(ring) + 16 * lane;
    const u32 scaleRing = smem_address(ring + S * 512) + 4 * lane;
    Cursor c = cursor_at(ph.a, ph.NT, ph.BP);
#pragma unroll
    for (int d = 0; d < S - 1; ++d) {
        if (ph.a + d < ph.b) {
            issue_at(ph, sExpert, c, codeRing + 512 * d, scaleRing + 128 * d, lane);
            c.advance(ph.NT, ph.BP);
        }
        commit_stage();
    }
    return c;
}

// The x rows of the block's pairs as B fragments (see gemv_mxfp4_mma.cu): pair q's area of BP * 4 k-steps x
// DEC_XB_STEP uint2 at xb + q * BP * 4 * DEC_XB_STEP, each row scaled by 2^e (max |x| in [2^14, 2^15)); back[q] =
// 2^(14 - e) undoes that and the weights' 2^-14. Then a zero area that lanes supplying no column read.
__device__ void prepare_x(const Phase& ph, const float* rows, const int* rowOfPair, uint2* xb, float* back,
                          float* warpMax) {
    constexpr int X_BATCH = 4;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nv = ph.K >> 2;
    u16* xh = reinterpret_cast<u16*>(xb);
    for (int q = 0; q < ph.pCount; ++q) {
        const int p = ph.pFirst + q;
        const float4* xv = reinterpret_cast<const float4*>(rows + (size_t)(rowOfPair ? rowOfPair[p] : p) * ph.K);
        float m = 0.0f;
        for (int b = threadIdx.x; b < nv; b += X_BATCH * blockDim.x) {
            float4 v[X_BATCH];
#pragma unroll
            for (int u = 0; u < X_BATCH; ++u) {
                const int i = b + u * blockDim.x;
                v[u] = i < nv ? __ldcg(xv + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < X_BATCH; ++u) {
                m = fmaxf(m, fmaxf(fmaxf(fabsf(v[u].x), fabsf(v[u].y)), fmaxf(fabsf(v[u].z), fabsf(v[u].w))));
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        if (lane == 0) warpMax[warp] = m;
        __syncthreads();
        m = warpMax[0];
#pragma unroll
        for (int w = 1; w < DEC_WARPS; ++w) m = fmaxf(m, warpMax[w]);
        const int biased = (int)((__float_as_uint(m) >> 23) & 0xFF);
        const int e = m == 0.0f ? 0 : max(-100, min(100, 141 - biased));
        if (threadIdx.x == 0) back[q] = pow2(14 - e);
        const float up = pow2(e);
        u16* area = xh + (size_t)q * ph.BP * 4 * DEC_XB_STEP * 4;
        for (int b = threadIdx.x; b < ph.BP * 16; b += X_BATCH * blockDim.x) {
            float4 v[X_BATCH];
#pragma unroll
            for (int u = 0; u < X_BATCH; ++u) {
                const int i = b + u * blockDim.x;
                v[u] = i < nv ? __ldcg(xv + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < X_BATCH; ++u) {
                const int i = b + u * blockDim.x;
                if (i < ph.BP * 16) {
                    const float vals[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        const int k = 4 * i + c;
                        const int step = k >> 4, r = k & 15;
                        const int idx = ((step * DEC_XB_STEP + ((r & 7) >> 1)) * 2 + (r >> 3)) * 2 + (r & 1);
                        const float s = vals[c] * up;
                        const u16 hi = f32_to_f16(s);
                        area[idx] = hi;
                        area[idx + 16] = f32_to_f16(s - f16_to_f32(hi)); // the lo part, 4 uint2 further
                    }
                }
            }
        }
        __syncthreads(); // warpMax is reused by the next pair
    }
    uint2* zero = xb + (size_t)ph.pCount * ph.BP * 4 * DEC_XB_STEP;
    for (int i = threadIdx.x; i < 4 * DEC_XB_STEP; i += blockDim.x) zero[i] = make_uint2(0u, 0u);
    __syncthreads();
}

// This warp's range of the phase, its ring already primed (next = the cursor prime_ring returned): partial sums of
// each (pair, tile) it touches into part, scaled back by back[].
__device__ void stream_range(const Phase& ph, const int* sExpert, const uint2* xb, const float* back, char* ring,
                             Cursor next, float* part) {
    constexpr int S = DEC_DEPTH;
    const int lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int gw = blockIdx.x * DEC_WARPS + (threadIdx.x >> 5);
    const u32 codeRing = smem_address(ring) + 16 * lane;
    const u32 scaleRing = smem_address(ring + S * 512) + 4 * lane;
    const bool suppliesB = g == 0 || g == 2;
    const uint2* zero = xb + (size_t)ph.pCount * ph.BP * 4 * DEC_XB_STEP;
    const int n = (int)(ph.b - ph.a);
    Cursor c = cursor_at(ph.a, ph.NT, ph.BP);
    float accLo = 0.0f, accHi = 0.0f;
    int slot = 0, refill = S - 1;
    for (int i = 0; i < n; ++i) {
        wait_stages<S - 2>();
        const uint4 q = *reinterpret_cast<const uint4*>(ring + 512 * slot + 16 * lane);
        const u32 cs = *reinterpret_cast<const u32*>(ring + S * 512 + 128 * slot + 4 * lane);
        if (i + S - 1 < n) {
            issue_at(ph, sExpert, next, codeRing + 512 * refill, scaleRing + 128 * refill, lane);
            next.advance(ph.NT, ph.BP);
        }
        commit_stage();
        slot = slot == S - 1 ? 0 : slot + 1;
        refill = refill == S - 1 ? 0 : refill + 1;
        const uint2* xq = suppliesB
            ? xb + ((size_t)(c.p - ph.pFirst) * ph.BP + c.bp) * 4 * DEC_XB_STEP + (g >> 1) * 4 + t
            : zero;
        const int xs = suppliesB ? DEC_XB_STEP : 0;
        u32 a0[4], b0[4], a1[4], b1[4];
        decode_word(q.x, a0);
        decode_word(q.y, b0);
        decode_word(q.z, a1);
        decode_word(q.w, b1);
        float d[4];
        mma16816(d, a0[0], b0[0], a0[1], b0[1], xq[0], 0.0f, 0.0f, 0.0f, 0.0f);
        mma16816(d, a0[2], b0[2], a0[3], b0[3], xq[xs], d[0], d[1], d[2], d[3]);
        accLo = fmaf(d[0], e8m0<0>(cs), accLo);
        accHi = fmaf(d[2], e8m0<1>(cs), accHi);
        mma16816(d, a1[0], b1[0], a1[1], b1[1], xq[2 * xs], 0.0f, 0.0f, 0.0f, 0.0f);
        mma16816(d, a1[2], b1[2], a1[3], b1[3], xq[3 * xs], d[0], d[1], d[2], d[3]);
        accLo = fmaf(d[0], e8m0<2>(cs), accLo);
        accHi = fmaf(d[2], e8m0<3>(cs), accHi);
        if (c.bp == ph.BP - 1 || i == n - 1) {
            // The end of this warp's part of a tile: quad sum (t = 0 holds the hi column, t = 1 the lo column).
            accLo += __shfl_xor_sync(0xffffffffu, accLo, 1);
            accLo += __shfl_xor_sync(0xffffffffu, accLo, 2);
            accHi += __shfl_xor_sync(0xffffffffu, accHi, 1);
            accHi += __shfl_xor_sync(0xffffffffu, accHi, 2);
            if (t == 0) {
                const int tile = c.p * ph.NT + c.rt;
                const int segment = gw - warp_of(ph.stages, ph.warps, (long long)tile * ph.BP);
                const float s = back[c.p - ph.pFirst];
                float* at = part + ((size_t)tile * DEC_SEGMENTS + segment) * 16;
                at[g] = accLo * s;
                at[g + 8] = accHi * s;
                if (segment == 0 && g == 0) {
                    const long long first = (long long)tile * ph.BP;
                    const int tiles = (int)(ph.stages / ph.BP);
                    reinterpret_cast<int*>(part + (size_t)tiles * DEC_SEGMENTS * 16)[tile] =
                        warp_of(ph.stages, ph.warps, first + ph.BP - 1) - gw + 1;
                }
            }
            accLo = 0.0f;
            accHi = 0.0f;
        }
        c.advance(ph.NT, ph.BP);
    }
    wait_stages<0>();
}

// Grid: one block per SM (cooperative). gate_up: rows13 x H (NT1 tiles, BP1 block pairs); down: H x I.
// part1: [pairs * NT1][DEC_SEGMENTS][16] floats + [pairs * NT1] segment counts, act: [pairs][I], part2 the same as
// part1 for NT2. barrier: a counter, zero on entry and
// left at zero (reset_barrier). The plan arrays are those of moe_activate_elements and moe_combine.
extern "C" __global__ void __launch_bounds__(DEC_WARPS * 32, 1)
moe_decode_mxfp4(const uint4* __restrict__ codes1, const u32* __restrict__ scales1, int NT1, int BP1,
                 const uint4* __restrict__ codes2, const u32* __restrict__ scales2, int NT2, int BP2,
                 const float* x, int H, int I, int rows13, int pairs, int warps1, int warps2,
                 const int* __restrict__ pairToken, const int* __restrict__ pairExpert,
                 const float* __restrict__ bias13, int gateMode, int act, float limit, float alpha,
                 const int* __restrict__ tokenPair, const float* __restrict__ tokenWeight, int topK, int tokens,
                 const float* __restrict__ bias2, int weightOnInput, float* part1, float* actRows, float* part2,
                 unsigned* barrier, float* out) {
    constexpr int S = DEC_DEPTH;
    // Dynamic shared memory: each warp's ring (S code slots of 512 bytes, S scale slots of 128), then the x areas.
    extern __shared__ uint2 shared[];
    __shared__ int sExpert[DEC_MAX_PAIRS];
    __shared__ float back[DEC_MAX_PAIRS];
    __shared__ float warpMax[DEC_WARPS];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
#ifdef DEC_EMPTY
    return;
#endif
#ifdef DEC_BARRIERS
    for (int b = 1; b <= 10; ++b) grid_barrier(barrier, b * gridDim.x);
    reset_barrier(barrier, 10);
    return;
#endif
    char* ring = reinterpret_cast<char*>(shared) + warp * S * 640;
    uint2* xb = reinterpret_cast<uint2*>(reinterpret_cast<char*>(shared) + DEC_WARPS * S * 640);
    for (int p = threadIdx.x; p < pairs; p += blockDim.x) sExpert[p] = pairExpert[p];
    __syncthreads();

    // A: gate_up.
    const Phase up = make_phase(codes1, scales1, NT1, BP1, H, pairs, warps1);
    Cursor next = prime_ring(up, sExpert, ring, lane);
#ifdef DEC_NO_PREP_A
    __syncthreads();
#else
    prepare_x(up, x, pairToken, xb, back, warpMax);
#endif
    stream_range(up, sExpert, xb, back, ring, next, part1);
#ifdef DEC_ONLY_A
    wait_stages<0>();
    return;
#endif
    const Phase down = make_phase(codes2, scales2, NT2, BP2, I, pairs, warps2);
    next = prime_ring(down, sExpert, ring, lane); // in flight across the next two barriers
    grid_barrier(barrier, gridDim.x);
#ifndef DEC_NO_BD
    // B: bias and activation, one element a thread, in float64 like moe_activate_elements.
    const int tiles1 = pairs * NT1;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs * I; i += gridDim.x * blockDim.x) {
        const int p = i / I, j = i - p * I;
        const float* br = bias13 != nullptr ? bias13 + (size_t)sExpert[p] * rows13 : nullptr;
        double v;
        if (gateMode == 0) {
            const float b = br != nullptr ? br[j] : 0.0f;
            v = act_plain(act, (double)row_sum(part1, tiles1, NT1, p, j) + (double)b);
        } else {
            const int gr = gateMode == 2 ? 2 * j : j;
            const int ur = gateMode == 2 ? 2 * j + 1 : I + j;
            const float bg = br != nullptr ? br[gr] : 0.0f;
            const float bu = br != nullptr ? br[ur] : 0.0f;
            const double gv = (double)row_sum(part1, tiles1, NT1, p, gr) + (double)bg;
            const double uv = (double)row_sum(part1, tiles1, NT1, p, ur) + (double)bu;
            v = act_gated(act, gv, uv, (double)limit, (double)alpha);
        }
        actRows[i] = (float)v;
    }
    grid_barrier(barrier, 2 * gridDim.x);
#endif
    // C: down.
#ifdef DEC_NO_PREP_C
    __syncthreads();
#else
    prepare_x(down, actRows, nullptr, xb, back, warpMax);
#endif
    stream_range(down, sExpert, xb, back, ring, next, part2);
#ifdef DEC_NO_BD
    grid_barrier(barrier, 2 * gridDim.x);
    reset_barrier(barrier, 2);
    return;
#endif
    grid_barrier(barrier, 3 * gridDim.x);

    // D: combine, one output element a thread: sum over the token's choices in choice order in float64, as
    // moe_combine, with its loads in rounds (choices; their partial sums and biases) rather than a chain per choice.
    const int tiles2 = pairs * NT2;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < tokens * H; i += gridDim.x * blockDim.x) {
        const int t = i / H, c = i - t * H;
        double acc = 0.0;
        for (int j0 = 0; j0 < topK; j0 += DEC_COMBINE_BATCH) {
            const int n = min(DEC_COMBINE_BATCH, topK - j0);
            int pair[DEC_COMBINE_BATCH];
            float w[DEC_COMBINE_BATCH];
#pragma unroll
            for (int j = 0; j < DEC_COMBINE_BATCH; ++j) {
                pair[j] = j < n ? tokenPair[t * topK + j0 + j] : -1;
                w[j] = j < n && !weightOnInput ? tokenWeight[t * topK + j0 + j] : 1.0f;
            }
            float y[DEC_COMBINE_BATCH], b[DEC_COMBINE_BATCH];
#pragma unroll
            for (int j = 0; j < DEC_COMBINE_BATCH; ++j) {
                y[j] = pair[j] >= 0 ? row_sum(part2, tiles2, NT2, pair[j], c) : 0.0f;
                b[j] = pair[j] >= 0 && bias2 != nullptr ? bias2[(size_t)sExpert[pair[j]] * H + c] : 0.0f;
            }
#pragma unroll
            for (int j = 0; j < DEC_COMBINE_BATCH; ++j) {
                if (pair[j] < 0) continue;
                double v = (double)y[j];
                if (bias2 != nullptr) v += (double)b[j];
                acc += (double)w[j] * v;
            }
        }
        out[i] = (float)acc;
    }
    reset_barrier(barrier, 3);
}
