// moe4j: the per-row stages of the experts pipeline around the two grouped GEMMs, one thread block per row:
//   moe_prepare_rows   GEMM1 input of each routed pair: the token (times its router weight when the weight goes on
//                      the input), quantize-dequantized per scheme (a13), columns in the weights' device order
//   moe_activate_rows  GEMM2 input of each pair: GEMM1 output + bias through the activation, quantize-dequantized (a2)
//   moe_combine        out[t] = sum over the token's pairs of router weight * (GEMM2 output + bias)
// A row is staged in shared memory because the quantizers need it whole (per-token scales) or in blocks.
// The GEMMs read their input rows either as float32 (the GEMV kernels) or as f16 scaled by a power of two per row
// (the MXFP4 tile kernel, which multiplies the 2^-e back in its epilogue), so a row is written in either form.
// Every kernel here follows the overlapped-launch protocol of moe4j_common.cuh (enter_after_prior_grid before touching any data).
#include "moe4j_quant.cuh"

#define OUT_F32 0
#define OUT_F16_SCALED 1

__device__ __forceinline__ u16 to_f16(float v) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

// Writes s[0, n) as row `row` of the output, columns permuted by perm (device column k holds s[perm[k]]) when
// given, zero-padded to `pitch` columns. F16_SCALED scales the row so that its largest magnitude lands in
// [2^14, 2^15) and stores the exponent: f16 then keeps 11 bits of every element near the top of the row.
__device__ void write_row(const float* s, int n, const int* perm, int mode, float* outF, u16* outH, int* outExp,
                          size_t row, int pitch, float* scratch) {
    if (mode == OUT_F32) {
        float* o = outF + row * pitch;
        for (int k = threadIdx.x; k < pitch; k += blockDim.x) {
            o[k] = k < n ? (perm != nullptr ? s[perm[k]] : s[k]) : 0.0f;
        }
        return;
    }
    float m = 0.0f;
    for (int k = threadIdx.x; k < n; k += blockDim.x) m = fmaxf(m, fabsf(s[k]));
    m = block_amax(m, scratch);
    const int biased = (int)((__float_as_uint(m) >> 23) & 0xFF);
    const int e = (m == 0.0f || m != m) ? 0 : max(-100, min(100, 141 - biased));
    const float up = __uint_as_float((u32)(127 + e) << 23);
    u16* o = outH + row * pitch;
    for (int k = threadIdx.x; k < pitch; k += blockDim.x) {
        o[k] = k < n ? to_f16((perm != nullptr ? s[perm[k]] : s[k]) * up) : (u16)0;
    }
    if (threadIdx.x == 0) outExp[row] = e;
}

extern "C" __global__ void moe_prepare_rows(const float* __restrict__ x, int H, const int* __restrict__ pairToken,
                                            const int* __restrict__ pairExpert, const float* __restrict__ pairWeight,
                                            int weightOnInput, int qKind, int qElem, int qGroup,
                                            const float* __restrict__ qScale, const int* __restrict__ qZero,
                                            const int* __restrict__ perm, int outMode, float* __restrict__ outF,
                                            u16* __restrict__ outH, int* __restrict__ outExp, int outPitch) {
    enter_after_prior_grid();
    extern __shared__ float s[]; // H values, then 32 floats of scratch
    float* scratch = s + H;
    const size_t p = blockIdx.x;
    // a dense linear's input rows (DeviceLinear) pass neither: row p is token p of the one matrix
    const int e = pairExpert != nullptr ? pairExpert[p] : 0;
    const float* xr = x + (pairToken != nullptr ? (size_t)pairToken[p] : p) * H;
    const float w = weightOnInput ? pairWeight[p] : 1.0f;
    if ((H & 3) == 0) {
        // 16-byte loads: the row is copied in a quarter of the round trips (rows of a multiple of 4 floats stay
        // 16-byte aligned).
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* s4 = reinterpret_cast<float4*>(s);
        for (int k = threadIdx.x; k < (H >> 2); k += blockDim.x) {
            float4 v = x4[k];
            if (weightOnInput) {
                v.x *= w;
                v.y *= w;
                v.z *= w;
                v.w *= w;
            }
            s4[k] = v;
        }
    } else {
        for (int k = threadIdx.x; k < H; k += blockDim.x) s[k] = weightOnInput ? xr[k] * w : xr[k];
    }
    __syncthreads();
    const Qdq q = {qKind, qElem, qGroup, qScale, qZero};
    qdq_row(s, H, q, e, scratch);
    write_row(s, H, perm != nullptr ? perm + (size_t)e * H : nullptr, outMode, outF, outH, outExp, p, outPitch,
              scratch);
}

// s[j] = activation of (GEMM1 row + bias) for j < I, in T arithmetic. Interleaved gate/up pairs are read as one
// 8-byte load.
template <typename T>
__device__ __forceinline__ void activate(const float* hr, const float* br, int I, int gateMode, int act, float limit,
                                         float alpha, float* s) {
    for (int j = threadIdx.x; j < I; j += blockDim.x) {
        if (gateMode == 0) {
            const T v = (T)hr[j] + (br != nullptr ? (T)br[j] : T(0));
            s[j] = (float)act_plain(act, v);
        } else {
            float hg, hu, bg = 0.0f, bu = 0.0f;
            if (gateMode == 2) {
                const float2 h2 = reinterpret_cast<const float2*>(hr)[j];
                hg = h2.x;
                hu = h2.y;
                if (br != nullptr) {
                    const float2 b2 = reinterpret_cast<const float2*>(br)[j];
                    bg = b2.x;
                    bu = b2.y;
                }
            } else {
                hg = hr[j];
                hu = hr[I + j];
                if (br != nullptr) {
                    bg = br[j];
                    bu = br[I + j];
                }
            }
            const T g = (T)hg + (br != nullptr ? (T)bg : T(0));
            const T u = (T)hu + (br != nullptr ? (T)bu : T(0));
            s[j] = (float)act_gated(act, g, u, (T)limit, (T)alpha);
        }
    }
}

// gateMode: 0 not gated (rows13 = I, the activation applies to each row), 1 concatenated (gate j = row j, up j =
// row I + j), 2 interleaved (gate j = row 2j, up j = row 2j + 1). The sums and the activation are float64, as
// the reference computes them, except for rows the f16 tile GEMM reads unquantized (float: see act_gated).
extern "C" __global__ void moe_activate_rows(const float* __restrict__ h, const int* __restrict__ pairExpert,
                                             const float* __restrict__ bias13, int rows13, int I, int gateMode,
                                             int act, float limit, float alpha, int qKind, int qElem, int qGroup,
                                             const float* __restrict__ qScale, const int* __restrict__ qZero,
                                             const int* __restrict__ perm, int outMode, float* __restrict__ outF,
                                             u16* __restrict__ outH, int* __restrict__ outExp, int outPitch) {
    enter_after_prior_grid();
    extern __shared__ float s[]; // I values, then 32 floats of scratch
    float* scratch = s + I;
    const size_t p = blockIdx.x;
    const int e = pairExpert[p];
    const float* hr = h + p * rows13;
    const float* br = bias13 != nullptr ? bias13 + (size_t)e * rows13 : nullptr;
    if (qKind == QDQ_NONE && outMode == OUT_F16_SCALED) {
        activate<float>(hr, br, I, gateMode, act, limit, alpha, s); // rounded to f16 next: see act_gated
    } else {
        activate<double>(hr, br, I, gateMode, act, limit, alpha, s);
    }
    __syncthreads();
    const Qdq q = {qKind, qElem, qGroup, qScale, qZero};
    qdq_row(s, I, q, e, scratch);
    write_row(s, I, perm != nullptr ? perm + (size_t)e * I : nullptr, outMode, outF, outH, outExp, p, outPitch,
              scratch);
}

// The activation alone, one element a thread, grid (pairs, ceil(I / blockDim)): for GEMM2 inputs that need no
// whole-row stage (no quantizer, float32, checkpoint column order). At decode a block per row would leave most of
// the GPU idle while each thread works through a dozen float64 activations in turn.
extern "C" __global__ void moe_activate_elements(const float* __restrict__ h, const int* __restrict__ pairExpert,
                                                 const float* __restrict__ bias13, int rows13, int I, int gateMode,
                                                 int act, float limit, float alpha, float* __restrict__ out,
                                                 int early) {
    allow_next_grid_if(early);
    const size_t p = blockIdx.x;
    const int j = blockIdx.y * blockDim.x + threadIdx.x;
    const bool live = j < I;
    const int gr = gateMode == 2 ? 2 * j : j;
    const int ur = gateMode == 2 ? 2 * j + 1 : I + j;
    // The pair's expert and its biases before the wait: the plan was written at least two kernels earlier (the GEMM
    // ahead triggers after its own wait), read through L2 (load_l2's reason); the biases never change.
    const int e = live && bias13 != nullptr ? __ldcg(pairExpert + p) : 0;
    const float* br = live && bias13 != nullptr ? bias13 + (size_t)e * rows13 : nullptr;
    const double bg = br != nullptr ? (double)br[gr] : 0.0;
    const double bu = br != nullptr && gateMode != 0 ? (double)br[ur] : 0.0;
    enter_after_prior_grid();
    if (!live) return;
    const float* hr = h + p * rows13;
    double v;
    if (gateMode == 0) {
        v = act_plain(act, (double)hr[j] + bg);
    } else {
        v = act_gated(act, (double)hr[gr] + bg, (double)hr[ur] + bu, (double)limit, (double)alpha);
    }
    out[p * I + j] = (float)v;
}

// Grid (tokens, ceil(H / (COLS * blockDim))), COLS = 4 when H is a multiple of 4 (16-byte loads and stores, and
// the choices' indices, weights and address arithmetic shared by four columns: with one column a thread the kernel
// was issue-bound at prefill), else 1. tokenPair[t * topK + j] is the pair row of the token's j-th choice in y, or
// -1 for an expert held elsewhere. Summed in float64 like the reference's accumulator, in choice order. Up to
// COMBINE_BATCH choices are read in three rounds (pair rows; their y values and experts; the biases) instead of a
// chain of dependent loads per choice: at decode the kernel is a handful of memory round trips and nothing else.
#define COMBINE_BATCH 8

template <int COLS>
struct Cols {
    float v[COLS];
};

template <int COLS>
__device__ __forceinline__ Cols<COLS> load_cols(const float* p) {
    Cols<COLS> r;
    if constexpr (COLS == 4) {
        const float4 v = *reinterpret_cast<const float4*>(p);
        r.v[0] = v.x;
        r.v[1] = v.y;
        r.v[2] = v.z;
        r.v[3] = v.w;
    } else {
        r.v[0] = *p;
    }
    return r;
}

template <int COLS>
__device__ __forceinline__ void combine_cols(const float* __restrict__ y, int H, const int* __restrict__ tokenPair,
                                             const float* __restrict__ tokenWeight, int topK,
                                             const int* __restrict__ pairExpert, const float* __restrict__ bias2,
                                             int weightOnInput, float* __restrict__ out) {
    const int c = (blockIdx.y * blockDim.x + threadIdx.x) * COLS;
    const size_t t = blockIdx.x;
    const bool live = c < H;
    int pair[COMBINE_BATCH];
    float w[COMBINE_BATCH];
    int expert[COMBINE_BATCH];
    Cols<COLS> b[COMBINE_BATCH];
    // A batch of choices: pair rows and weights, then their experts, then the experts' biases. The plan's tables were
    // written at least two kernels earlier (the GEMM ahead triggers after its own wait) and the biases never change,
    // so the first batch is read before the wait, through L2 (load_l2's reason), and only y after it.
    auto choices = [&](int j0) {
        const int n = min(COMBINE_BATCH, topK - j0);
#pragma unroll
        for (int j = 0; j < COMBINE_BATCH; ++j) {
            pair[j] = live && j < n ? __ldcg(tokenPair + t * topK + j0 + j) : -1;
            w[j] = live && j < n && !weightOnInput ? __ldcg(tokenWeight + t * topK + j0 + j) : 1.0f;
        }
#pragma unroll
        for (int j = 0; j < COMBINE_BATCH; ++j) {
            expert[j] = pair[j] >= 0 && bias2 != nullptr ? __ldcg(pairExpert + pair[j]) : -1;
        }
#pragma unroll
        for (int j = 0; j < COMBINE_BATCH; ++j) {
            if (expert[j] >= 0) b[j] = load_cols<COLS>(bias2 + (size_t)expert[j] * H + c);
        }
    };
    choices(0);
    enter_after_prior_grid();
    if (!live) return;
    double acc[COLS];
#pragma unroll
    for (int i = 0; i < COLS; ++i) acc[i] = 0.0;
    for (int j0 = 0; j0 < topK; j0 += COMBINE_BATCH) {
        if (j0 > 0) choices(j0);
        Cols<COLS> v[COMBINE_BATCH];
#pragma unroll
        for (int j = 0; j < COMBINE_BATCH; ++j) {
            if (pair[j] >= 0) v[j] = load_cols<COLS>(y + (size_t)pair[j] * H + c);
        }
#pragma unroll
        for (int j = 0; j < COMBINE_BATCH; ++j) {
            if (pair[j] < 0) continue;
            const double wj = (double)w[j];
#pragma unroll
            for (int i = 0; i < COLS; ++i) {
                double x = (double)v[j].v[i];
                if (bias2 != nullptr) x += (double)b[j].v[i];
                acc[i] += wj * x;
            }
        }
    }
    if constexpr (COLS == 4) {
        *reinterpret_cast<float4*>(out + t * H + c) =
            make_float4((float)acc[0], (float)acc[1], (float)acc[2], (float)acc[3]);
    } else {
        out[t * H + c] = (float)acc[0];
    }
}

extern "C" __global__ void moe_combine(const float* __restrict__ y, int H, const int* __restrict__ tokenPair,
                                       const float* __restrict__ tokenWeight, int topK,
                                       const int* __restrict__ pairExpert, const float* __restrict__ bias2,
                                       int weightOnInput, float* __restrict__ out, int early) {
    allow_next_grid_if(early); // combine_cols waits for the kernel ahead after reading the plan
    if ((H & 3) == 0) {
        combine_cols<4>(y, H, tokenPair, tokenWeight, topK, pairExpert, bias2, weightOnInput, out);
    } else {
        combine_cols<1>(y, H, tokenPair, tokenWeight, topK, pairExpert, bias2, weightOnInput, out);
    }
}

// A small batch's inputs, staged contiguously in pinned host memory (x padded to 16 bytes, the plan's arrays, the
// routes), read through the bus by unified addressing and written to their three device buffers. One kernel in the
// call's graph instead of three copy-engine transfers, each of which took a few microseconds to start at decode.
extern "C" __global__ void moe_copy_in(const u32* __restrict__ src, u32* __restrict__ x, int xWords,
                                       u32* __restrict__ meta, int metaWords, u32* __restrict__ routes,
                                       int routeWords) {
    enter_after_prior_grid();
    const int total = xWords + metaWords + routeWords;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        const u32 v = src[i];
        if (i < xWords) {
            x[i] = v;
        } else if (i < xWords + metaWords) {
            meta[i - xWords] = v;
        } else {
            routes[i - xWords - metaWords] = v;
        }
    }
}
