// moe4j: grouped expert GEMM on CUDA cores for every packed weight format, read in units of 32 elements of a row.
//
// One kernel for all formats, specialised by defines (CudaWeightCodes):
//   MOE4J_CODE   how a unit's codes are stored: F32 128 bytes, BF16 / F16 64, FP8 E4M3 / E5M2 and INT8 32,
//                E2M1 and INT4 16 (two a byte, even element low), E3M2 / E2M3 24 (four codes in three bytes)
//   MOE4J_SCALE  the block scales: none, E8M0, E4M3 or F32, on a grid of blockRows x blockCols (blockCols a
//                multiple of 32, or the whole row) ...
//   MOE4J_HALF   ... or blockCols = 16 (NVFP4): two scales per unit
//   MOE4J_ZERO   signed zero points on the scale grid
//   MOE4J_TB     the most routed pairs of one expert a block computes together: each weight unit is decoded once
//                and used for all of them, so prefill reads the weights once per TB pairs rather than per pair
// An element is (code - zero) * blockScale * shardScale (ExpertMatrix's definition); the shard scale is per row
// and applied to the row's sum. Rows are padded with zero bytes to whole units on upload, and x with zeros.
//
// Grid: x over row groups of MOE4J_ROWS * MOE4J_WARPS, y over batches (expert, first entry, count <= TB; 0: empty). Entry i
// of a batch reads x row xRows[first + i] and writes output row first + i, outPitch floats apart: the sum times the
// row's shard scale, plus bias[row] when given, added to what the row holds when accumulate is set.
// A dense linear (one matrix, io.moe4j.backend.cuda.DeviceLinear) passes no batches and no xRows: batch y is then
// expert 0, entries y * TB .. of the `tokens` rows, and entry i reads x row i.
#include "moe4j_common.cuh"

#define CODE_F32 0
#define CODE_BF16 1
#define CODE_F16 2
#define CODE_E4M3 3
#define CODE_E5M2 4
#define CODE_E2M1 5
#define CODE_E3M2 6
#define CODE_E2M3 7
#define CODE_INT8 8
#define CODE_INT4 9

#define SCALE_NONE 0
#define SCALE_E8M0 1
#define SCALE_E4M3 2
#define SCALE_F32 3

#ifndef MOE4J_CODE
#define MOE4J_CODE CODE_BF16
#endif
#ifndef MOE4J_SCALE
#define MOE4J_SCALE SCALE_NONE
#endif
#ifndef MOE4J_HALF
#define MOE4J_HALF 0
#endif
#ifndef MOE4J_ZERO
#define MOE4J_ZERO 0
#endif
#ifndef MOE4J_TB
#define MOE4J_TB 8
#endif

#if MOE4J_CODE == CODE_F32
#define UNIT_BYTES 128
#elif MOE4J_CODE == CODE_BF16 || MOE4J_CODE == CODE_F16
#define UNIT_BYTES 64
#elif MOE4J_CODE == CODE_E4M3 || MOE4J_CODE == CODE_E5M2 || MOE4J_CODE == CODE_INT8
#define UNIT_BYTES 32
#elif MOE4J_CODE == CODE_E3M2 || MOE4J_CODE == CODE_E2M3
#define UNIT_BYTES 24
#else
#define UNIT_BYTES 16
#endif
#define UNIT_WORDS (UNIT_BYTES / 4)

// The sub-byte float codes are decoded through fp16 bit patterns that read as value * 2^-FACTOR_LOG2 (exactly,
// subnormals included); the factor goes back in with the unit's scale.
#if MOE4J_CODE == CODE_E2M1 || MOE4J_CODE == CODE_E2M3
#define FACTOR_LOG2 14
#elif MOE4J_CODE == CODE_E3M2
#define FACTOR_LOG2 12
#else
#define FACTOR_LOG2 0
#endif

__device__ __forceinline__ void load_unit(const u8* p, u32 (&w)[UNIT_WORDS]) {
#if UNIT_BYTES == 24
    // 24-byte units are 8-byte aligned (unit offsets and row pitches are multiples of 24, the base of 256).
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        const uint2 v = __ldg(reinterpret_cast<const uint2*>(p) + i);
        w[2 * i] = v.x;
        w[2 * i + 1] = v.y;
    }
#else
#pragma unroll
    for (int i = 0; i < UNIT_BYTES / 16; ++i) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(p) + i);
        w[4 * i] = v.x;
        w[4 * i + 1] = v.y;
        w[4 * i + 2] = v.z;
        w[4 * i + 3] = v.w;
    }
#endif
}

__device__ __forceinline__ float half_lo(u32 h) {
    float v;
    asm("{ .reg .b16 l, h;\n\t mov.b32 {l, h}, %1;\n\t cvt.f32.f16 %0, l; }" : "=f"(v) : "r"(h));
    return v;
}

__device__ __forceinline__ float half_hi(u32 h) {
    float v;
    asm("{ .reg .b16 l, h;\n\t mov.b32 {l, h}, %1;\n\t cvt.f32.f16 %0, h; }" : "=f"(v) : "r"(h));
    return v;
}

// The 6-bit code i of a 24-byte unit (little-endian bit stream, code i at bit 6i).
__device__ __forceinline__ u32 six(const u32 (&w)[UNIT_WORDS], int i) {
    const int bit = 6 * i;
    const int word = bit >> 5;
    const int shift = bit & 31;
    const u32 lo = w[word];
    const u32 hi = word + 1 < UNIT_WORDS ? w[word + 1] : 0u;
    return (shift == 0 ? lo : __funnelshift_r(lo, hi, shift)) & 0x3Fu;
}

// The 32 code values of a unit (times 2^-FACTOR_LOG2 for the sub-byte floats), exact.
__device__ __forceinline__ void decode_unit(const u32 (&w)[UNIT_WORDS], float (&v)[32]) {
#pragma unroll
    for (int i = 0; i < 32; ++i) {
#if MOE4J_CODE == CODE_F32
        v[i] = __uint_as_float(w[i]);
#elif MOE4J_CODE == CODE_BF16
        const u32 x = w[i >> 1];
        v[i] = __uint_as_float((i & 1) ? (x & 0xFFFF0000u) : (x << 16));
#elif MOE4J_CODE == CODE_F16
        const u32 x = w[i >> 1];
        v[i] = (i & 1) ? half_hi(x) : half_lo(x);
#elif MOE4J_CODE == CODE_E4M3
        // The hardware converts two E4M3 at a time to an exact fp16 pair, NaN included (sm_89+).
        const u32 x = w[i >> 2];
        u32 h;
        asm("{ .reg .b16 t;\n\t cvt.u16.u32 t, %1;\n\t cvt.rn.f16x2.e4m3x2 %0, t; }" : "=r"(h) : "r"(x >> (16 * ((i >> 1) & 1))));
        v[i] = (i & 1) ? half_hi(h) : half_lo(h);
#elif MOE4J_CODE == CODE_E5M2
        // E5M2 is the top byte of an fp16 with the same value (infinities and NaN included).
        const u32 b = (w[i >> 2] >> (8 * (i & 3))) & 0xFFu;
        v[i] = half_lo(b << 8);
#elif MOE4J_CODE == CODE_INT8
        v[i] = (float)(signed char)((w[i >> 2] >> (8 * (i & 3))) & 0xFFu);
#elif MOE4J_CODE == CODE_INT4
        const int nib = (int)((w[i >> 3] >> (4 * (i & 7))) & 0xFu);
        v[i] = (float)((nib ^ 8) - 8);
#elif MOE4J_CODE == CODE_E2M1
        // s ee m -> fp16 sign, exponent bits 10-11 and mantissa bit 9: e2m1 * 2^-14.
        const u32 c = (w[i >> 3] >> (4 * (i & 7))) & 0xFu;
        v[i] = half_lo(((c & 7u) << 9) | ((c & 8u) << 12));
#elif MOE4J_CODE == CODE_E3M2
        // s eee mm -> fp16 exponent bits 10-12, mantissa bits 8-9: e3m2 * 2^-12.
        const u32 c = six(w, i);
        v[i] = half_lo(((c & 0x1Fu) << 8) | ((c & 0x20u) << 10));
#elif MOE4J_CODE == CODE_E2M3
        // s ee mmm -> fp16 exponent bits 10-11, mantissa bits 7-9: e2m3 * 2^-14.
        const u32 c = six(w, i);
        v[i] = half_lo(((c & 0x1Fu) << 7) | ((c & 0x20u) << 10));
#endif
    }
}

__device__ __forceinline__ float scale_value(const u8* __restrict__ scales, size_t index) {
#if MOE4J_SCALE == SCALE_E8M0
    const u32 b = __ldg(scales + index);
    if (b == 255u) return __uint_as_float(0x7FC00000u);
    return b == 0u ? __uint_as_float(0x00400000u) : __uint_as_float(b << 23);
#elif MOE4J_SCALE == SCALE_E4M3
    const u32 b = __ldg(scales + index);
    u32 h;
    asm("{ .reg .b16 t;\n\t cvt.u16.u32 t, %1;\n\t cvt.rn.f16x2.e4m3x2 %0, t; }" : "=r"(h) : "r"(b));
    return half_lo(h);
#elif MOE4J_SCALE == SCALE_F32
    return __ldg(reinterpret_cast<const float*>(scales) + index);
#else
    return 1.0f;
#endif
}

// The scales and zero points of unit u of row `row` of expert e: s0 and z0 for its first 16 elements, s1 and z1
// for the rest (they differ only for NVFP4's 16-column blocks); the sub-byte codes' factor is folded into s.
struct UnitScale {
    float s0, s1, z0, z1;
};

__device__ __forceinline__ UnitScale unit_scale(const u8* __restrict__ scales, const signed char* __restrict__ zeros,
                                                int e, int row, int u, int rowBlocks, int colBlocks, int blockRows,
                                                int blockCols) {
    constexpr float factor = (float)(1 << FACTOR_LOG2);
#if MOE4J_SCALE != SCALE_NONE
    const size_t gridRow = ((size_t)e * rowBlocks + row / blockRows) * colBlocks;
#if MOE4J_HALF
    const int cb0 = min(2 * u, colBlocks - 1);
    const int cb1 = min(2 * u + 1, colBlocks - 1);
#else
    const int cb0 = min((int)(((long long)u * 32) / blockCols), colBlocks - 1);
    const int cb1 = cb0;
#endif
    const float s0 = scale_value(scales, gridRow + cb0) * factor;
    const float s1 = MOE4J_HALF ? scale_value(scales, gridRow + cb1) * factor : s0;
#if MOE4J_ZERO
    return {s0, s1, (float)__ldg(zeros + gridRow + cb0), (float)__ldg(zeros + gridRow + cb1)};
#else
    return {s0, s1, 0.0f, 0.0f};
#endif
#else
    return {factor, factor, 0.0f, 0.0f};
#endif
}

// A unit's 32 element values: its codes decoded, less the zero points, times the scales.
__device__ __forceinline__ void scaled_unit(const u32 (&w)[UNIT_WORDS], const UnitScale& sc, float (&v)[32]) {
    decode_unit(w, v);
#if MOE4J_SCALE != SCALE_NONE
#pragma unroll
    for (int k = 0; k < 32; ++k) v[k] = (v[k] - (k < 16 ? sc.z0 : sc.z1)) * (k < 16 ? sc.s0 : sc.s1);
#else
    if (FACTOR_LOG2 != 0) {
#pragma unroll
        for (int k = 0; k < 32; ++k) v[k] *= sc.s0;
    }
#endif
}

// x rows are staged as [TB][KP] floats; unit u's 8 float4 slots are XOR-swizzled with u so that the lanes of a
// warp, which read consecutive units, spread over all banks.
__device__ __forceinline__ int x_index(int u, int j) { return u * 8 + (j ^ (u & 7)); }

// Staged slot s of an x row: x[4s .. 4s + 3], zero past K (16-byte loads where the row allows).
__device__ __forceinline__ float4 x_slot(const float* __restrict__ xr, int s, int K) {
    const int k = 4 * s;
    if ((K & 3) == 0 && k + 3 < K && (reinterpret_cast<size_t>(xr) & 15) == 0) {
        return __ldg(reinterpret_cast<const float4*>(xr + k));
    }
    return make_float4(k < K ? __ldg(xr + k) : 0.0f, k + 1 < K ? __ldg(xr + k + 1) : 0.0f,
                       k + 2 < K ? __ldg(xr + k + 2) : 0.0f, k + 3 < K ? __ldg(xr + k + 3) : 0.0f);
}

// Unit u's 32 values times the staged x row xv: one chain of products in element order. Both kernels sum a unit
// through this, which keeps their results bit for bit the same.
__device__ __forceinline__ float unit_dot(const float (&v)[32], const float4* xv, int u) {
    float d = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float4 xx = xv[x_index(u, j)];
        d = fmaf(v[4 * j], xx.x, d);
        d = fmaf(v[4 * j + 1], xx.y, d);
        d = fmaf(v[4 * j + 2], xx.z, d);
        d = fmaf(v[4 * j + 3], xx.w, d);
    }
    return d;
}

extern "C" __global__ void __launch_bounds__(MOE4J_WARPS * 32)
moe_gemm_units(const u8* __restrict__ codes, const u8* __restrict__ scales, const signed char* __restrict__ zeros,
               const float* __restrict__ shard, const float* __restrict__ x, const int4* __restrict__ batches,
               const int* __restrict__ xRows, float* __restrict__ out, int N, int K, int U, int rowBlocks,
               int colBlocks, int blockRows, int blockCols, int shards, int shardRows, int outPitch,
               const float* __restrict__ bias, int accumulate, int tokens) {
    constexpr int R = MOE4J_ROWS;
    constexpr int TB = MOE4J_TB;
    extern __shared__ float4 xs[]; // [TB][U * 8] float4
    enter_after_prior_grid();
    int e, first, count;
    if (batches != nullptr) {
        const int4 batch = batches[blockIdx.y];
        e = batch.x;
        first = batch.y;
        count = batch.z;
        if (count == 0) return; // an empty batch a device-built plan pads its grid with
    } else {
        e = 0;
        first = blockIdx.y * TB;
        count = min(TB, tokens - first);
    }
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;

    // Stage the batch's x rows, zero past K and past count.
    const int slots = U * 8;
    for (int i = 0; i < TB; ++i) {
        const int entry = first + min(i, count - 1);
        const float* xr = x + (size_t)(xRows != nullptr ? xRows[entry] : entry) * K;
        for (int s = threadIdx.x; s < slots; s += blockDim.x) {
            xs[i * slots + x_index(s >> 3, s & 7)] = i < count ? x_slot(xr, s, K) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }
    __syncthreads();

    const int row0 = (blockIdx.x * MOE4J_WARPS + warp) * R;
    if (row0 >= N) return;
    float acc[R][TB];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int i = 0; i < TB; ++i) acc[r][i] = 0.0f;

    const size_t rowBytes = (size_t)U * UNIT_BYTES;
    for (int u = lane; u < U; u += 32) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int row = min(row0 + r, N - 1);
            u32 w[UNIT_WORDS];
            load_unit(codes + ((size_t)e * N + row) * rowBytes + (size_t)u * UNIT_BYTES, w);
            float v[32];
            scaled_unit(w, unit_scale(scales, zeros, e, row, u, rowBlocks, colBlocks, blockRows, blockCols), v);
#pragma unroll
            for (int i = 0; i < TB; ++i) {
                if (i < count) acc[r][i] += unit_dot(v, xs + i * slots, u);
            }
        }
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int row = row0 + r;
        const float rowScale = shard != nullptr ? __ldg(shard + (size_t)e * shards + min(row, N - 1) / shardRows) : 1.0f;
#pragma unroll
        for (int i = 0; i < TB; ++i) {
            const float total = warp_sum(acc[r][i]);
            if (lane == 0 && row < N && i < count) {
                float* o = out + (size_t)(first + i) * outPitch + row;
                const float y = total * rowScale + (bias != nullptr ? bias[row] : 0.0f);
                *o = accumulate ? *o + y : y;
            }
        }
    }
}

// One token's product (a decode step's linear, or routed pairs one to a batch): moe_gemm_units with TB = 1, same
// arguments and the same sums bit for bit (lane l takes units l, l + 32, ... of a row, in that order, each unit's 32
// products chained as there, against x staged in shared memory the same way), shaped for memory instead: each lane
// holds GEMV_DEPTH units of each of its warp's GEMV_R rows in registers before using any, 128 bytes in all, so that a
// warp has 4 KB of weights in flight; the host picks GEMV_R (1, 2 or 4) so that a row fits one such chunk where it
// can (an FP8 row of 768 columns takes 4 rows a warp, of 2048 two, of 4096 one), which also spreads the block's x
// staging over more rows. The weights do not depend on earlier kernels, so a dense linear's blocks (no batches) load
// their first chunk before waiting for the kernel ahead, and routed pairs do the same when batchesReady says their
// batches were written at least two kernels earlier (read through L2 before the wait, see moe4j_common.cuh); x is
// staged after the wait.
#ifndef GEMV_R
#define GEMV_R 1
#endif
#define GEMV_DEPTH (UNIT_BYTES * GEMV_R >= 128 ? 1 : 128 / (UNIT_BYTES * GEMV_R))

extern "C" __global__ void __launch_bounds__(MOE4J_WARPS * 32)
moe_gemv_units(const u8* __restrict__ codes, const u8* __restrict__ scales, const signed char* __restrict__ zeros,
               const float* __restrict__ shard, const float* __restrict__ x, const int4* __restrict__ batches,
               const int* __restrict__ xRows, float* __restrict__ out, int N, int K, int U, int rowBlocks,
               int colBlocks, int blockRows, int blockCols, int shards, int shardRows, int outPitch,
               const float* __restrict__ bias, int accumulate, int tokens, int batchesReady) {
    constexpr int R = GEMV_R;
    constexpr int D = GEMV_DEPTH;
    extern __shared__ float4 xs[]; // [U * 8] float4, swizzled as moe_gemm_units stages them
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    bool waited = false;
    int e = 0;
    int entry = blockIdx.y; // a dense linear: token y
    if (batches != nullptr) {
        int4 batch;
        if (batchesReady) {
            batch = load_l2(batches + blockIdx.y);
        } else {
            enter_after_prior_grid();
            waited = true;
            batch = batches[blockIdx.y];
        }
        if (batch.z == 0) { // an empty batch a device-built plan pads its grid with
            if (!waited) enter_after_prior_grid();
            return;
        }
        e = batch.x;
        entry = batch.y;
    }
    const int row0 = (blockIdx.x * MOE4J_WARPS + warp) * R;
    const size_t rowBytes = (size_t)U * UNIT_BYTES;
    int rows[R];
#pragma unroll
    for (int r = 0; r < R; ++r) rows[r] = min(row0 + r, N - 1);

    u32 w[D][R][UNIT_WORDS];
    UnitScale sc[D][R];
    auto load = [&](int chunk) {
#pragma unroll
        for (int j = 0; j < D; ++j) {
            const int u = lane + 32 * (chunk * D + j);
            if (u < U) {
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    load_unit(codes + ((size_t)e * N + rows[r]) * rowBytes + (size_t)u * UNIT_BYTES, w[j][r]);
                    sc[j][r] = unit_scale(scales, zeros, e, rows[r], u, rowBlocks, colBlocks, blockRows, blockCols);
                }
            }
        }
    };
    if (row0 < N) load(0);
    if (!waited) enter_after_prior_grid();

    const float* xr = x + (size_t)(xRows != nullptr ? xRows[entry] : entry) * K;
    for (int s = threadIdx.x; s < U * 8; s += blockDim.x) xs[x_index(s >> 3, s & 7)] = x_slot(xr, s, K);
    __syncthreads();
    if (row0 >= N) return;

    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    const int chunks = (U + 32 * D - 1) / (32 * D);
    for (int c = 0; c < chunks; ++c) {
        if (c > 0) load(c);
#pragma unroll
        for (int j = 0; j < D; ++j) {
            const int u = lane + 32 * (c * D + j);
            if (u < U) {
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    float v[32];
                    scaled_unit(w[j][r], sc[j][r], v);
                    acc[r] += unit_dot(v, xs, u);
                }
            }
        }
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int row = row0 + r;
        const float total = warp_sum(acc[r]);
        if (lane == 0 && row < N) {
            const float rowScale = shard != nullptr ? __ldg(shard + (size_t)e * shards + row / shardRows) : 1.0f;
            float* o = out + (size_t)entry * outPitch + row;
            const float y = total * rowScale + (bias != nullptr ? bias[row] : 0.0f);
            *o = accumulate ? *o + y : y;
        }
    }
}
