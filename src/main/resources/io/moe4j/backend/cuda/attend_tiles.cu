// moe4j: causal attention of a prompt's rows in tiles, on tensor cores (io.moe4j.backend.cuda.ModelOps#attendTiles).
#include "attention.cuh"

// Causal attention of a prompt's rows in tiles (the flash-attention schedule): a block takes TILE_ROWS rows of one
// sequence (one cache) and one query head, holds their queries in shared memory and walks the key positions any of its
// rows sees, TILE_KEYS at a time (keys and values by cp.async, the next tile loading while this one is used), with an
// online softmax per row. model_attend_rows reads a row's keys and values once for that row; here they are read once
// for TILE_ROWS rows, which is what a prompt's quadratic share of attention needs. Warp w takes rows 16w..16w+15 and
// multiplies on tensor cores (mma.sync m16n8k8, tf32) in three products per pair of float32 operands, hi*hi + hi*lo +
// lo*hi with hi the operand rounded to tf32 and lo what is left, which keeps float32's accuracy (the lo*lo term is
// below float32's rounding of the sum): scores S = Q K^T, then O += P V with the weights P passed from the scores'
// accumulators to the next product's operands by shuffles. A warp skips a tile that none of its rows sees (the far
// side of the causal diagonal, keys before a window). Rows of shared memory are padded (queries and keys by 4 floats,
// values by 8) so that the fragments' loads meet 32 different banks. Windows (sliding, chunked) and sinks as
// model_attend_rows; each row's mask is its own visible span, so the rows need not be consecutive positions.
// Compiled for one head width, TILE_HEAD_DIM (a multiple of 8, at most 128): every loop over the head unrolled and the
// output accumulators (TILE_HEAD_DIM / 2 a thread) only as many as the head needs, which sets the registers and so the
// blocks a multiprocessor holds. grid: (ceil(tokens / TILE_ROWS), heads); block: 128; dynamic shared memory:
// 4 * (TILE_ROWS * (D + 4) + 2 * TILE_KEYS * (D + 4) + 2 * TILE_KEYS * (D + 8)) bytes, D = TILE_HEAD_DIM
#define TILE_ROWS 64
#define TILE_KEYS 32
#ifndef TILE_HEAD_DIM
#define TILE_HEAD_DIM 64
#endif
#if TILE_HEAD_DIM % 8 != 0 || TILE_HEAD_DIM > 128
#error "TILE_HEAD_DIM: a multiple of 8, at most 128"
#endif

// x as a tf32 (round to nearest) and the tf32 of what that leaves
__device__ __forceinline__ void split_tf32(float x, unsigned& hi, unsigned& lo) {
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(hi) : "f"(x));
    float rest = x - __uint_as_float(hi);
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(lo) : "f"(rest));
}

__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9},"
                 " {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d += a b in float32 accuracy from tf32 halves: the small products first
__device__ __forceinline__ void mma_3xtf32(float (&d)[4], const float (&a)[4], float b0, float b1) {
    unsigned ah[4], al[4], bh0, bl0, bh1, bl1;
#pragma unroll
    for (int i = 0; i < 4; i++) split_tf32(a[i], ah[i], al[i]);
    split_tf32(b0, bh0, bl0);
    split_tf32(b1, bh1, bl1);
    mma_tf32(d, al, bh0, bh1);
    mma_tf32(d, ah, bl0, bl1);
    mma_tf32(d, ah, bh0, bh1);
}

extern "C" __global__ void __launch_bounds__(128)
model_attend_tiles(const float* __restrict__ q, int qStride, const unsigned long long* __restrict__ caches,
                   const float* __restrict__ sinks, float* __restrict__ out, const long long* __restrict__ positions,
                   int tokens, int heads, int kvHeads, int window, float scale) {
    constexpr int headDim = TILE_HEAD_DIM;
    extern __shared__ __align__(16) float smem[];
    __shared__ long long sSpan[4][2];
    constexpr int qPitch = headDim + 4, vPitch = headDim + 8;
    float* sQ = smem;                                  // [TILE_ROWS][qPitch]
    float* sK = sQ + TILE_ROWS * qPitch;               // [2][TILE_KEYS][qPitch]
    float* sV = sK + 2 * TILE_KEYS * qPitch;           // [2][TILE_KEYS][vPitch]
    const int t0 = (gridDim.x - 1 - blockIdx.x) * TILE_ROWS;  // the last rows (the longest spans) first
    const int rows = tokens - t0 < TILE_ROWS ? tokens - t0 : TILE_ROWS;
    const int h = blockIdx.y, kvh = h / (heads / kvHeads);
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const float* cache = row_cache(caches, 0, 0);
    // this thread's two rows (16w + g and 16w + g + 8): visible spans; the warp's and the block's unions (the tables
    // were written before the pass: read before the wait)
    long long rowLo[2], rowHi[2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        int r = 16 * warp + g + 8 * i;
        long long p = r < rows ? load_l2(positions + t0 + r) : -1;
        rowLo[i] = r < rows ? first_visible(p, window) : 0x7fffffffffffffffLL;
        rowHi[i] = p;
    }
    const long long warpLo = warp_min_ll(rowLo[0] < rowLo[1] ? rowLo[0] : rowLo[1]);
    const long long warpHi = warp_max_ll(rowHi[0] > rowHi[1] ? rowHi[0] : rowHi[1]);
    if (lane == 0) {
        sSpan[warp][0] = warpLo;
        sSpan[warp][1] = warpHi;
    }
    enter_after_prior_grid();
    constexpr int quads = headDim >> 2;
    const int width = kvHeads * headDim;
    for (int i = tid; i < rows * quads; i += blockDim.x) {
        int r = i / quads, c = (i - r * quads) << 2;
        cp_async16(sQ + r * qPitch + c, q + (long long) (t0 + r) * qStride + (long long) h * headDim + c);
    }
    __syncthreads();
    long long lo = sSpan[0][0], hi = sSpan[0][1];
#pragma unroll
    for (int w = 1; w < 4; w++) {
        lo = sSpan[w][0] < lo ? sSpan[w][0] : lo;
        hi = sSpan[w][1] > hi ? sSpan[w][1] : hi;
    }
    hi += 1;  // exclusive

    // a tile's keys and values; value rows past the span are zeroed (a weight of 0 times stale memory could be NaN)
    auto load = [&](long long base, int buffer) {
        int n = (int) (hi - base < TILE_KEYS ? hi - base : TILE_KEYS);
        float* sk = sK + buffer * TILE_KEYS * qPitch;
        float* sv = sV + buffer * TILE_KEYS * vPitch;
        for (int i = tid; i < TILE_KEYS * quads; i += blockDim.x) {
            int j = i / quads, c = (i - j * quads) << 2;
            if (j < n) {
                const float* row = cache + (base + j) * 2LL * width + (long long) kvh * headDim + c;
                cp_async16(sk + j * qPitch + c, row);
                cp_async16(sv + j * vPitch + c, row + width);
            } else {
                *(float4*) (sv + j * vPitch + c) = make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");  // the queries' copies join the first group
    };

    constexpr int dTiles = headDim >> 3;
    float o[dTiles][4];
    float m[2] = {NEG_INF_F, NEG_INF_F}, l[2] = {0.f, 0.f};
#pragma unroll
    for (int n = 0; n < dTiles; n++) {
#pragma unroll
        for (int c = 0; c < 4; c++) o[n][c] = 0.f;
    }
    const float* qRow = sQ + (16 * warp + g) * qPitch + t;
    load(lo, 0);
    int buffer = 0;
    for (long long base = lo; base < hi; base += TILE_KEYS, buffer ^= 1) {
        if (base + TILE_KEYS < hi) {
            load(base + TILE_KEYS, buffer ^ 1);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        if (base <= warpHi && base + TILE_KEYS > warpLo) {
            const float* sk = sK + buffer * TILE_KEYS * qPitch;
            const float* sv = sV + buffer * TILE_KEYS * vPitch;
            // scores of rows g, g + 8 against keys 8j + 2t, 8j + 2t + 1: s[j][0..1] row g, s[j][2..3] row g + 8
            float s[TILE_KEYS / 8][4];
#pragma unroll
            for (int j = 0; j < TILE_KEYS / 8; j++) {
#pragma unroll
                for (int c = 0; c < 4; c++) s[j][c] = 0.f;
            }
#pragma unroll
            for (int k0 = 0; k0 < headDim; k0 += 8) {
                const float a[4] = {qRow[k0], qRow[k0 + 8 * qPitch], qRow[k0 + 4], qRow[k0 + 8 * qPitch + 4]};
#pragma unroll
                for (int j = 0; j < TILE_KEYS / 8; j++) {
                    const float* kb = sk + (8 * j + g) * qPitch + k0 + t;
                    mma_3xtf32(s[j], a, kb[0], kb[4]);
                }
            }
            // the online softmax of each row over the keys it sees; a row's keys lie in the 4 lanes of its g
#pragma unroll
            for (int half = 0; half < 2; half++) {
                float top = NEG_INF_F;
#pragma unroll
                for (int j = 0; j < TILE_KEYS / 8; j++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        long long key = base + 8 * j + 2 * t + e;
                        bool seen = key >= rowLo[half] && key <= rowHi[half];
                        float v = seen ? s[j][2 * half + e] * scale : NEG_INF_F;
                        s[j][2 * half + e] = v;
                        top = fmaxf(top, v);
                    }
                }
                top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 1));
                top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 2));
                const float mNew = fmaxf(m[half], top);
                const float correction = mNew == NEG_INF_F ? 1.f : __expf(m[half] - mNew);
                float sum = 0.f;
#pragma unroll
                for (int j = 0; j < TILE_KEYS / 8; j++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        float v = s[j][2 * half + e];
                        float p = v == NEG_INF_F ? 0.f : __expf(v - mNew);
                        s[j][2 * half + e] = p;
                        sum += p;
                    }
                }
                sum += __shfl_xor_sync(0xffffffffu, sum, 1);
                sum += __shfl_xor_sync(0xffffffffu, sum, 2);
                l[half] = l[half] * correction + sum;
                m[half] = mNew;
#pragma unroll
                for (int n = 0; n < dTiles; n++) {
                    o[n][2 * half] *= correction;
                    o[n][2 * half + 1] *= correction;
                }
            }
            // O += P V, keys 8kk..8kk+7 a step: P's operand (rows g, g + 8; keys t, t + 4) from the lanes holding
            // those weights (g's lanes t / 2 and 2 + t / 2, accumulator element t & 1)
            const int src = (lane & ~3) | (t >> 1);
            const bool odd = t & 1;
#pragma unroll
            for (int kk = 0; kk < TILE_KEYS / 8; kk++) {
                float x0 = __shfl_sync(0xffffffffu, s[kk][0], src), x1 = __shfl_sync(0xffffffffu, s[kk][1], src);
                float y0 = __shfl_sync(0xffffffffu, s[kk][2], src), y1 = __shfl_sync(0xffffffffu, s[kk][3], src);
                float z0 = __shfl_sync(0xffffffffu, s[kk][0], src + 2);
                float z1 = __shfl_sync(0xffffffffu, s[kk][1], src + 2);
                float w0 = __shfl_sync(0xffffffffu, s[kk][2], src + 2);
                float w1 = __shfl_sync(0xffffffffu, s[kk][3], src + 2);
                const float a[4] = {odd ? x1 : x0, odd ? y1 : y0, odd ? z1 : z0, odd ? w1 : w0};
                const float* vb = sv + (8 * kk + t) * vPitch + g;
#pragma unroll
                for (int n = 0; n < dTiles; n++) mma_3xtf32(o[n], a, vb[8 * n], vb[8 * n + 4 * vPitch]);
            }
        }
        __syncthreads();  // before the next load overwrites this buffer
    }
    const float sink = sinks == nullptr ? NEG_INF_F : sinks[h];
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int r = 16 * warp + g + 8 * half;
        if (r >= rows) continue;
        const float mx = fmaxf(m[half], sink);
        const float keep = __expf(m[half] - mx);
        const float den = l[half] * keep + (sinks == nullptr ? 0.f : __expf(sink - mx));
        const float f = keep / den;
        float* dst = out + ((long long) (t0 + r) * heads + h) * headDim + 2 * t;
#pragma unroll
        for (int n = 0; n < dTiles; n++) {
            *(float2*) (dst + 8 * n) = make_float2(o[n][2 * half] * f, o[n][2 * half + 1] * f);
        }
    }
}
