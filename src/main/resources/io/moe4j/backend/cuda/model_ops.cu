// moe4j: the decoder's ops on the device, for a model resident there (io.moe4j.model.cuda.DeviceModel).
//   model_embed         token ids -> float32 rows of a bf16 embedding table
//   model_rms_norm      RMSNorm of rows (sum of squares in float64, as the host's RmsNorm), after adding a residual;
//                       model_rms_norm_qdq with the next linear's input quantization after it
//   model_linear_bf16   y = x W^T + b for a bf16 W [out, in], optionally added into y (the residual stream);
//                       _staged for one token, its weights in shared memory before the kernel ahead ends
//   model_position_rows q/k norms, rotary embedding and temperature of the q and k heads of fused q|k|v rows (cos/sin
//                       tables made on the host), and the k and v into the layer's cache ([position][k | v])
//   model_attend_rows   causal attention of each (token, head) over its sequence's cache: sliding or chunked windows,
//                       sinks (online softmax); a prompt's rows take model_attend_tiles (attend_tiles.cu) instead
//   model_mla_position_rows, model_mla_store_rows, model_attend_latent_rows  DeepSeek's multi-head latent attention:
//                       the latent's norm and the rope key into the latent cache, attention over the cached latents with
//                       kv_b_proj taken into each query and output
//   model_silu_mul      a dense MLP's silu(gate) * up;  model_fill_choices  the shared experts' routing
//   model_router_logits router logits in float64 (exact float products), for the host's selection rules;
//                       model_norm_router_logits with the norm before them, for a few rows
//   model_linear_bf16_r{1,2,4,8}  model_linear_bf16 for batches of tokens, R output rows a warp
//   model_linear_bf16_mma the same on tensor cores (x as two bf16 terms), from 4 tokens; _split for batches too
//                       small to fill the GPU with its 64-row blocks; or sliced over K, model_linear_slices adding
//                       the slices' sums
//   model_gather_rows   rows picked by index (each sequence's last row of a batch, for lm_head)
//   model_argmax        the index of the largest logit (a greedy decode reads one id back, not the logits)
//   model_sample_rows   a token drawn by temperature, top-k, top-p and min-p with the host's random number
// Every kernel waits for the one before at its top (overlapped launches in a recorded decode step, sm_90+).
// Everything is float32 with float32 accumulation unless said otherwise. Positions and caches are read from tables in
// device memory (row_cache), so that a decode step's launches are the same every step and replay from a CUDA graph.
#include "moe4j_common.cuh"
#include "moe4j_quant.cuh"
#include "attention.cuh"

#define LINEAR_TOKENS 4   // tokens a warp of model_linear_bf16 takes per pass over its weight row
#define LINEAR_HOLD 4     // 16-byte loads a lane of model_linear_bf16 issues before using any (more cost occupancy)
#define ATTEND_WARPS 16  // warps over a latent query's positions (model_attend_latent_rows)
#define HEAD_DIM_MAX 256  // the widest head the attention kernels take (8 values a lane)

__device__ __forceinline__ float bf16_to_float(u16 b) {
    return __uint_as_float(((u32) b) << 16);
}

__device__ __forceinline__ double warp_sum_dbl(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// grid: tokens; block: 256
extern "C" __global__ void model_embed(const u16* __restrict__ table, const int* __restrict__ ids,
                                       float* __restrict__ out, int hidden) {
    enter_after_prior_grid();
    long long row = (long long) ids[blockIdx.x] * hidden;
    float* o = out + (long long) blockIdx.x * hidden;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) o[i] = bf16_to_float(table[row + i]);
}

// out = norm(x) per row; with add given, x += add first (the residual stream takes the last block's output) and
// the norm is of the sum; with add2 too, x += (add + add2) (routed and shared experts, summed first as the host does). grid: rows; block: a multiple of 32, at most 1024. weight may be null (a weightless norm).
// A decode step's norm is one block on the critical path, so it is bound by load latency, not bandwidth: rows of a
// multiple of 4 that fit NORM_HOLD float4 a thread are loaded in one go into registers (all loads in flight at
// once, no second read of x), and the weight, which no kernel writes, is loaded before waiting for the kernel before.
#define NORM_HOLD 4
__device__ __forceinline__ double block_sum_dbl(double s) {
    __shared__ double partial[32];
    s = warp_sum_dbl(s);
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    if (warp == 0) {
        int warps = blockDim.x >> 5;
        double t = lane < warps ? partial[lane] : 0.0;
        t = warp_sum_dbl(t);
        if (lane == 0) partial[0] = t;
    }
    __syncthreads();
    return partial[0];
}

// model_rms_norm's row held in registers: the first T threads of the block take float4 i, i + T, ... (T a multiple
// of 32, n a multiple of 4, n / 4 <= NORM_HOLD * T); the others hold nothing but join the block sum, where their
// partial 0 changes nothing, so a block of any size >= T sums in the order a block of T does. r += plus (+ plus2)
// first when given; the normed row goes to dst (global or shared memory).
__device__ __forceinline__ void rms_norm_held(float* __restrict__ r, const float* __restrict__ plus,
                                              const float* __restrict__ plus2, const float* __restrict__ weight,
                                              float4* dst, int n, int T, float eps) {
    const int n4 = n >> 2;
    const bool holds = (int) threadIdx.x < T;
    float4 wv[NORM_HOLD], v[NORM_HOLD];
#pragma unroll
    for (int k = 0; k < NORM_HOLD; k++) {
        int i = threadIdx.x + k * T;
        wv[k] = weight != nullptr && holds && i < n4 ? ((const float4*) weight)[i] : make_float4(1.f, 1.f, 1.f, 1.f);
    }
    enter_after_prior_grid();
#pragma unroll
    for (int k = 0; k < NORM_HOLD; k++) {
        int i = threadIdx.x + k * T;
        v[k] = holds && i < n4 ? ((const float4*) r)[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    double s = 0;
#pragma unroll
    for (int k = 0; k < NORM_HOLD; k++) {
        int i = threadIdx.x + k * T;
        if (holds && i < n4) {
            if (plus != nullptr) {
                float4 b = ((const float4*) plus)[i];
                if (plus2 != nullptr) {
                    float4 c = ((const float4*) plus2)[i];
                    b.x += c.x; b.y += c.y; b.z += c.z; b.w += c.w;
                }
                v[k].x += b.x; v[k].y += b.y; v[k].z += b.z; v[k].w += b.w;
                ((float4*) r)[i] = v[k];
            }
            s += (double) v[k].x * v[k].x + (double) v[k].y * v[k].y + (double) v[k].z * v[k].z
                    + (double) v[k].w * v[k].w;
        }
    }
    double inv = 1.0 / sqrt(block_sum_dbl(s) / n + (double) eps);
#pragma unroll
    for (int k = 0; k < NORM_HOLD; k++) {
        int i = threadIdx.x + k * T;
        if (holds && i < n4) {
            float4 y;
            y.x = wv[k].x * (float) (v[k].x * inv); y.y = wv[k].y * (float) (v[k].y * inv);
            y.z = wv[k].z * (float) (v[k].z * inv); y.w = wv[k].w * (float) (v[k].w * inv);
            dst[i] = y;
        }
    }
}

// __launch_bounds__: rows of over 4096 float4 take 1024 threads, which the kernel must fit in registers
extern "C" __global__ void __launch_bounds__(1024) model_rms_norm(float* __restrict__ x, const float* __restrict__ add,
                                          const float* __restrict__ add2, const float* __restrict__ weight,
                                          float* __restrict__ out, int n, float eps, int early) {
    allow_next_grid_if(early);
    float* r = x + (long long) blockIdx.x * n;
    const float* plus = add == nullptr ? nullptr : add + (long long) blockIdx.x * n;
    const float* plus2 = add2 == nullptr ? nullptr : add2 + (long long) blockIdx.x * n;
    float* o = out + (long long) blockIdx.x * n;
    const int n4 = n >> 2;
    if ((n & 3) == 0 && n4 <= NORM_HOLD * (int) blockDim.x) {
        rms_norm_held(r, plus, plus2, weight, (float4*) o, n, blockDim.x, eps);
        return;
    }
    enter_after_prior_grid();
    double s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float f = r[i];
        if (plus != nullptr) {
            f += plus2 != nullptr ? plus[i] + plus2[i] : plus[i];
            r[i] = f;
        }
        double v = f;
        s += v * v;
    }
    double inv = 1.0 / sqrt(block_sum_dbl(s) / n + (double) eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float normed = (float) (r[i] * inv);
        o[i] = weight == nullptr ? normed : weight[i] * normed;
    }
}

// model_rms_norm followed by a linear's input rule (moe4j_quant.cuh's qdq_row, as moe_prepare_rows applies it for
// DeviceLinear), so that the linear reads its prepared input from out and the separate input stage goes: one kernel
// fewer on a decode step's chain. The norm is model_rms_norm's held path with T = normThreads threads (the same sums,
// so the same bits), the row then staged in shared memory (n floats and 32 of scratch) for the whole block to
// quantize-dequantize. Rows of a multiple of 4 with n / 4 <= NORM_HOLD * normThreads only (the caller checks).
extern "C" __global__ void __launch_bounds__(1024) model_rms_norm_qdq(float* __restrict__ x,
        const float* __restrict__ add, const float* __restrict__ add2, const float* __restrict__ weight,
        float* __restrict__ out, int n, float eps,
        int early, int normThreads, int qKind, int qElem, int qGroup, const float* __restrict__ qScale,
        const int* __restrict__ qZero) {
    extern __shared__ float staged[]; // n values, then 32 floats of scratch
    allow_next_grid_if(early);
    float* r = x + (long long) blockIdx.x * n;
    const float* plus = add == nullptr ? nullptr : add + (long long) blockIdx.x * n;
    const float* plus2 = add2 == nullptr ? nullptr : add2 + (long long) blockIdx.x * n;
    rms_norm_held(r, plus, plus2, weight, (float4*) staged, n, normThreads, eps);
    __syncthreads();
    const Qdq q = {qKind, qElem, qGroup, qScale, qZero};
    qdq_row(staged, n, q, 0, staged + n);
    float4* o = (float4*) (out + (long long) blockIdx.x * n);
    for (int i = threadIdx.x; i < (n >> 2); i += blockDim.x) o[i] = ((const float4*) staged)[i];
}

// s + the dot product of 8 bf16 weights (16 bytes, in order) with the 8 floats at xr, one fused multiply-add at a
// time in that order: the one-token linears' sums, which the batch kernels repeat exactly.
__device__ __forceinline__ float dot8_bf16(uint4 packed, const float4* __restrict__ xr, float s) {
    const u32 words[4] = {packed.x, packed.y, packed.z, packed.w};
    float wv[8];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        wv[2 * k] = __uint_as_float(words[k] << 16);
        wv[2 * k + 1] = __uint_as_float(words[k] & 0xffff0000u);
    }
    const float4 a = xr[0], c = xr[1];
    s = fmaf(wv[0], a.x, s); s = fmaf(wv[1], a.y, s); s = fmaf(wv[2], a.z, s); s = fmaf(wv[3], a.w, s);
    s = fmaf(wv[4], c.x, s); s = fmaf(wv[5], c.y, s); s = fmaf(wv[6], c.z, s); s = fmaf(wv[7], c.w, s);
    return s;
}

// A lane's LINEAR_HOLD 16-byte groups g0, g0 + 32, ... of a weight row (zeros past its end), loaded together before
// any is used.
__device__ __forceinline__ void load_held(uint4 (&held)[LINEAR_HOLD], const uint4* __restrict__ wr, int g0,
                                          int groups) {
#pragma unroll
    for (int h = 0; h < LINEAR_HOLD; h++) {
        int g = g0 + 32 * h;
        held[h] = g < groups ? __ldg(wr + g) : make_uint4(0u, 0u, 0u, 0u);
    }
}

// The bytes of `rows` weight rows from row0 into L2, one prefetch a 128-byte line, spread over the warp's lanes.
// The batch linears call it before waiting for the kernel before (weights are never written by a kernel), so that a
// step streams a linear's weights while the short, latency-bound kernel ahead of it (a norm, the attention) runs.
__device__ __forceinline__ void prefetch_rows_l2(const u16* __restrict__ w, long long row0, int rows, int in,
                                                 int lane) {
    const unsigned long long begin = (unsigned long long) (w + row0 * in);
    const unsigned long long end = begin + 2ULL * rows * in;
    for (unsigned long long a = (begin & ~127ULL) + 128ULL * lane; a < end; a += 32 * 128ULL) {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
    }
}

// One warp per output row, LINEAR_TOKENS tokens per pass over the row (a pass reads the row once; decode is one
// pass). in must be even (bf16 pairs); rows of a multiple of 8 are read 16 bytes a lane (8 weights, two float4 of x),
// LINEAR_HOLD of a lane's loads issued before any is used (decode is bound by the weights' bytes). No L2 prefetch of
// the row, unlike the batch kernels: for one token the first loads go out before the wait instead (H200, a decode
// step replayed alone: 2363 us unrolled with the prefetch, 2242 held with it, 2187 held without, 2132 held early).
// grid: ceil(out / 8); block: 256 (8 warps).
// __launch_bounds__: 4 blocks a multiprocessor (64 registers), or a one-wave grid (qkv, o) becomes 1.4 waves
extern "C" __global__ void __launch_bounds__(256, 4)
model_linear_bf16(const float* __restrict__ x, const u16* __restrict__ w, const float* __restrict__ bias,
                  float* __restrict__ y, int tokens, int in, int out, int accumulate) {
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    bool wide = (in & 7) == 0;
    const uint4* wr = (const uint4*) (w + (long long) min(row, out - 1) * in);
    int groups = in >> 3;
    // the lane's groups of the row, LINEAR_HOLD at a time, all loaded before any is used: one warp's row is a few KB,
    // and only many loads in flight per warp keep a one-wave grid at the memory's speed. The first LINEAR_HOLD go out
    // before the wait (no kernel writes weights), overlapping the end of the kernel before.
    uint4 held[LINEAR_HOLD];
    if (wide) {
        load_held(held, wr, lane, groups);
    }
    enter_after_prior_grid();
    if (row >= out) return;
    float b = bias == nullptr ? 0.f : bias[row];
    for (int t0 = 0; t0 < tokens; t0 += LINEAR_TOKENS) {
        float acc[LINEAR_TOKENS];
#pragma unroll
        for (int j = 0; j < LINEAR_TOKENS; j++) acc[j] = 0.f;
        if (wide) {
            for (int g0 = lane; g0 < groups; g0 += 32 * LINEAR_HOLD) {
                if (t0 > 0 || g0 > lane) {
                    load_held(held, wr, g0, groups);
                }
#pragma unroll
                for (int h = 0; h < LINEAR_HOLD; h++) {
                    int g = g0 + 32 * h;
                    if (g >= groups) break;
#pragma unroll
                    for (int j = 0; j < LINEAR_TOKENS; j++) {
                        if (t0 + j < tokens) {
                            acc[j] = dot8_bf16(held[h], (const float4*) (x + (long long) (t0 + j) * in) + 2 * g,
                                               acc[j]);
                        }
                    }
                }
            }
        } else {
            const u32* wr = (const u32*) (w + (long long) row * in);
            int pairs = in >> 1;
            for (int p = lane; p < pairs; p += 32) {
                u32 packed = wr[p];
                float w0 = __uint_as_float(packed << 16);
                float w1 = __uint_as_float(packed & 0xffff0000u);
#pragma unroll
                for (int j = 0; j < LINEAR_TOKENS; j++) {
                    if (t0 + j < tokens) {
                        float2 xv = ((const float2*) (x + (long long) (t0 + j) * in))[p];
                        acc[j] = fmaf(w0, xv.x, fmaf(w1, xv.y, acc[j]));
                    }
                }
            }
        }
#pragma unroll
        for (int j = 0; j < LINEAR_TOKENS; j++) {
            float v = warp_sum_f(acc[j]);
            if (lane == 0 && t0 + j < tokens) {
                float* dst = y + (long long) (t0 + j) * out + row;
                *dst = (accumulate ? *dst : 0.f) + v + b;
            }
        }
    }
}

// model_linear_bf16 for one token (decode) and rows of a multiple of 8: the first `staged` 16-byte groups of each
// warp's row are copied into shared memory (cp.async) before the wait for the kernel ahead, so that a one-wave grid
// has the whole matrix in flight while the short kernels ahead (the attention, a norm) finish, without the registers
// that holding it would take; the rest of a longer row is loaded as model_linear_bf16 does. A lane's staged groups
// are a prefix of its groups (lane, lane + 32, ...), taken in the same order with the same products as
// model_linear_bf16's, so the sums are that kernel's and a sequence's logits do not depend on the kernel.
// dynamic shared memory: 8 warps x staged x 16 bytes. grid: ceil(out / 8); block: 256 (8 warps).
extern "C" __global__ void __launch_bounds__(256, 4)
model_linear_bf16_staged(const float* __restrict__ x, const u16* __restrict__ w, const float* __restrict__ bias,
                         float* __restrict__ y, int in, int out, int accumulate, int staged) {
#if __CUDA_ARCH__ >= 800
    extern __shared__ uint4 stage[];
    const int warp = threadIdx.x >> 5;
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x >> 5) + warp;
    const int groups = in >> 3;
    const uint4* wr = (const uint4*) (w + (long long) min(row, out - 1) * in);
    uint4* mine = stage + (long long) warp * staged;
    for (int g = lane; g < staged; g += 32) {
        cp_async16((float*) (mine + g), (const float*) (wr + g));
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
    // the lane's first groups past the staged ones: lane + 32 i for the least i that reaches `staged`
    const int rest = lane < staged ? lane + 32 * ((staged - 1 - lane) / 32 + 1) : lane;
    uint4 held[LINEAR_HOLD];
    load_held(held, wr, rest, groups);
    enter_after_prior_grid();
    asm volatile("cp.async.wait_all;" ::: "memory");
    if (row >= out) return;
    const float4* xv = (const float4*) x;
    float s = 0.f;
    for (int g = lane; g < staged; g += 32) {
        s = dot8_bf16(mine[g], xv + 2 * g, s);
    }
    for (int g0 = rest; g0 < groups; g0 += 32 * LINEAR_HOLD) {
        if (g0 > rest) {
            load_held(held, wr, g0, groups);
        }
#pragma unroll
        for (int h = 0; h < LINEAR_HOLD; h++) {
            int g = g0 + 32 * h;
            if (g >= groups) break;
            s = dot8_bf16(held[h], xv + 2 * g, s);
        }
    }
    float v = warp_sum_f(s);
    if (lane == 0) {
        float b = bias == nullptr ? 0.f : bias[row];
        float* dst = y + row;
        *dst = (accumulate ? *dst : 0.f) + v + b;
    }
#endif
}

// model_linear_bf16 for batches of tokens (in a multiple of 8): a warp takes R output rows and the tokens in passes
// of LINEAR_BATCH, so a pass loads each x element once for R rows (the one-row kernel reloads the batch's x for
// every row: at 64 tokens lm_head moved ~150 GB through L1). Each (row, token) sum is the one-row kernel's: the
// same lanes take the same 8-column groups in the same order, then the same warp sum, so a sequence stepped in a
// batch gets the logits it gets alone.
// grid: ceil(out / (8 R)); block: 256 (8 warps).
#define LINEAR_BATCH 8
template <int R>
__device__ __forceinline__ void linear_bf16_rows(const float* __restrict__ x, const u16* __restrict__ w,
                                                 const float* __restrict__ bias, float* __restrict__ y, int tokens,
                                                 int in, int out, int accumulate) {
    const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * R;
    const int lane = threadIdx.x & 31;
    if (row0 >= out) return;
    const int groups = in >> 3;
    for (int t0 = 0; t0 < tokens; t0 += LINEAR_BATCH) {
        float acc[R][LINEAR_BATCH];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int j = 0; j < LINEAR_BATCH; j++) acc[r][j] = 0.f;
        for (int g = lane; g < groups; g += 32) {
            float wv[R][8];
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int row = min(row0 + r, out - 1); // rows past the end compute a copy, never stored
                uint4 packed = __ldg((const uint4*) (w + (long long) row * in) + g);
                u32 words[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    wv[r][2 * k] = __uint_as_float(words[k] << 16);
                    wv[r][2 * k + 1] = __uint_as_float(words[k] & 0xffff0000u);
                }
            }
#pragma unroll
            for (int j = 0; j < LINEAR_BATCH; j++) {
                if (t0 + j < tokens) {
                    const float4* xr = (const float4*) (x + (long long) (t0 + j) * in) + 2 * g;
                    const float4 a = xr[0], c = xr[1];
#pragma unroll
                    for (int r = 0; r < R; r++) {
                        float s = acc[r][j];
                        s = fmaf(wv[r][0], a.x, s); s = fmaf(wv[r][1], a.y, s); s = fmaf(wv[r][2], a.z, s);
                        s = fmaf(wv[r][3], a.w, s); s = fmaf(wv[r][4], c.x, s); s = fmaf(wv[r][5], c.y, s);
                        s = fmaf(wv[r][6], c.z, s); s = fmaf(wv[r][7], c.w, s);
                        acc[r][j] = s;
                    }
                }
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = row0 + r;
            const float b = bias == nullptr || row >= out ? 0.f : bias[row];
#pragma unroll
            for (int j = 0; j < LINEAR_BATCH; j++) {
                const float v = warp_sum_f(acc[r][j]);
                if (lane == 0 && row < out && t0 + j < tokens) {
                    float* dst = y + (long long) (t0 + j) * out + row;
                    *dst = (accumulate ? *dst : 0.f) + v + b;
                }
            }
        }
    }
}

#define LINEAR_ROWS_KERNEL(R)                                                                                        \
    extern "C" __global__ void __launch_bounds__(256) model_linear_bf16_r##R(                                        \
            const float* __restrict__ x, const u16* __restrict__ w, const float* __restrict__ bias,                  \
            float* __restrict__ y, int tokens, int in, int out, int accumulate) {                                    \
        const int row0 = (blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * R;                               \
        if (row0 < out) prefetch_rows_l2(w, row0, min(R, out - row0), in, threadIdx.x & 31);                         \
        enter_after_prior_grid();                                                                                    \
        linear_bf16_rows<R>(x, w, bias, y, tokens, in, out, accumulate);                                             \
    }
LINEAR_ROWS_KERNEL(1)
LINEAR_ROWS_KERNEL(2)
LINEAR_ROWS_KERNEL(4)
LINEAR_ROWS_KERNEL(8)

// model_linear_bf16 on tensor cores, for batches of 4 tokens or more (prefill, decode batches), where the
// CUDA-core kernels are bound by their instructions, not the weights' bytes. mma.m16n8k16 (bf16 in, float32
// accumulate): A = 16 rows of W, B = 8 tokens of x. x is float32: it goes in as two bf16 terms, hi = bf16(x) and
// lo = bf16(x - hi), each multiplied by the (exact) bf16 weights, so products keep ~16 bits of x (the CUDA-core
// kernels' float32 products keep 24; the conformance tolerances are far wider). A dot product does not care in which
// order k runs, so each lane loads 8 consecutive columns of its two W rows and of its token's x (16-byte loads) and
// the fragments name them as the MMA's k indices; A and B use the same mapping.
// A block is MMA_LIN_WARPS warps of 16 MMA_LIN_ROW_TILES rows each over one pass of 64 tokens. x is what limits a
// batch's linear: read and split per 16 rows, a 64-token lm_head moved ~9 GB through L2 and ran at a fifth of the
// weights' bandwidth. So the block's threads split each 32-column chunk of the pass's x once into hi/lo fragments in
// shared memory (double-buffered: the next chunk is staged while this one multiplies) and every warp takes them from
// there, each fragment feeding the MMAs of all the warp's row tiles.
// in: a multiple of 32. grid: (ceil(tokens / 64), ceil(out / (16 MMA_LIN_WARPS MMA_LIN_ROW_TILES)), K slices):
// token passes fastest, so the blocks running together share one block of W rows; block: 32 MMA_LIN_WARPS.
#define MMA_LIN_WARPS 4
#define MMA_LIN_TILES 8  // 8-token tiles a pass: 64 tokens
__device__ __forceinline__ u32 pack_bf16(float lo, float hi) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ __forceinline__ float bf16_round(float v) {
    u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %1;" : "=r"(r) : "f"(v));
    return __uint_as_float(r << 16);
}

__device__ __forceinline__ void mma_bf16(float* c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9},"
                 " {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// The 32-column chunk c of tokens n0 .. n0 + 63 of x as MMA fragments: the hi words [MMA_LIN_TILES tiles][32 lanes]
// uint4, then the lo words alike, lane (g, t) of tile j holding token n0 + 8j + g, columns 32c + 8t .. + 7 as bf16
// pairs (hi and lo apart so that a warp's 16-byte reads of either are contiguous: interleaved, each read took twice
// the shared-memory wavefronts); tokens past the end are zeros. Each thread takes X_SLOTS (tile, lane) slots of the
// 256: load_x_chunk fetches them into registers (issued MMA_LIN_DEPTH chunks ahead, so their latency hides behind
// the MMAs), store_x_chunk splits and stores them,
// skipping the tiles no token of the pass reaches (the MMAs stop before those: a batch of 8 tokens converted 64
// tokens' worth of x a chunk for 8).
#define X_SLOTS (MMA_LIN_TILES * 32 / (32 * MMA_LIN_WARPS))
__device__ __forceinline__ void load_x_chunk(const float* __restrict__ x, int tokens, int in, int n0, int c,
                                             float4 (&v)[X_SLOTS][2]) {
#pragma unroll
    for (int k = 0; k < X_SLOTS; k++) {
        const int slot = threadIdx.x + k * 32 * MMA_LIN_WARPS;
        const int j = slot >> 5, lane = slot & 31;
        const int token = n0 + 8 * j + (lane >> 2);
        if (token < tokens) {
            const float4* xr = (const float4*) (x + (long long) token * in + 32 * c + 8 * (lane & 3));
            v[k][0] = xr[0];
            v[k][1] = xr[1];
        } else {
            v[k][0] = v[k][1] = make_float4(0.f, 0.f, 0.f, 0.f);
        }
    }
}

__device__ __forceinline__ void store_x_chunk(const float4 (&v)[X_SLOTS][2], uint4* __restrict__ frag, int live) {
#pragma unroll
    for (int k = 0; k < X_SLOTS; k++) {
        const int slot = threadIdx.x + k * 32 * MMA_LIN_WARPS;
        if (8 * (slot >> 5) >= live) continue;  // tile j = slot / 32 holds tokens 8j .. 8j + 7 of the pass
        const float e[8] = {v[k][0].x, v[k][0].y, v[k][0].z, v[k][0].w, v[k][1].x, v[k][1].y, v[k][1].z, v[k][1].w};
        u32 hi[4], lo[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float h0 = bf16_round(e[2 * i]), h1 = bf16_round(e[2 * i + 1]);
            hi[i] = pack_bf16(h0, h1);
            lo[i] = pack_bf16(e[2 * i] - h0, e[2 * i + 1] - h1);
        }
        frag[slot] = make_uint4(hi[0], hi[1], hi[2], hi[3]);
        frag[MMA_LIN_TILES * 32 + slot] = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    }
}

// Chunks in flight a warp: the weights (and the raw x) of chunk c + MMA_LIN_DEPTH are loaded while chunk c multiplies,
// into a ring of registers (slot c % MMA_LIN_DEPTH; the loop is unrolled by the depth so every slot is a register).
// One chunk ahead left a block's 20-90 chunks a chain of DRAM round trips.
#ifndef MMA_LIN_DEPTH
#define MMA_LIN_DEPTH 2
#endif
// 16-row tiles a warp: each x fragment read from shared memory feeds that many MMAs. Shared memory, not DRAM, bound
// the one-tile kernel at 64 tokens (Nsight Compute on an H200, a 64-token lm_head: L1/shared throughput 98-99%, DRAM
// 18%): a warp read 8 KB of x fragments a chunk for 1 KB of weights.
#ifndef MMA_LIN_ROW_TILES
#define MMA_LIN_ROW_TILES 2
#endif

extern "C" __global__ void __launch_bounds__(32 * MMA_LIN_WARPS)
model_linear_bf16_mma(const float* __restrict__ x, const u16* __restrict__ w, const float* __restrict__ bias,
                      float* __restrict__ y, int tokens, int in, int out, int accumulate, float* __restrict__ partials) {
    constexpr int D = MMA_LIN_DEPTH;
    constexpr int RT = MMA_LIN_ROW_TILES;
    // two chunks' x fragments, 8 KB each: [the tiles' hi words | the tiles' lo words], a warp's 16-byte reads of one
    // half contiguous (no bank conflicts)
    __shared__ uint4 frag[2][MMA_LIN_TILES * 32 * 2];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int row0 = (blockIdx.y * MMA_LIN_WARPS + warp) * 16 * RT;
    const int n0 = blockIdx.x * 8 * MMA_LIN_TILES;
    const uint4* wA[RT];
    const uint4* wB[RT];
    // blockIdx.z of gridDim.z: a slice of the 32-column chunks (K split for batches too small to fill the GPU)
    const int all = in >> 5;
    const int per = (all + gridDim.z - 1) / gridDim.z;
    const int first = blockIdx.z * per;
    const int chunks = min(all, first + per) - first;
#pragma unroll
    for (int r = 0; r < RT; r++) {
        // rows past the end: computed, not stored
        const int rA = min(row0 + 16 * r + g, out - 1), rB = min(row0 + 16 * r + g + 8, out - 1);
        wA[r] = (const uint4*) (w + (long long) rA * in) + 4 * first + t;
        wB[r] = (const uint4*) (w + (long long) rB * in) + 4 * first + t;
    }
    x += 32 * first;
    // slot d: columns 32c + 8t .. + 8 of each row tile's rows g and g + 8, for the chunk c = d (mod D) in flight
    uint4 pa[D][RT], pb[D][RT];
    float4 xv[D][X_SLOTS][2];
#pragma unroll
    for (int d = 0; d < D; d++) {  // W is never written by a kernel: its first chunks go out before the wait
        if (d < chunks) {
#pragma unroll
            for (int r = 0; r < RT; r++) {
                pa[d][r] = __ldg(wA[r] + 4 * d);
                pb[d][r] = __ldg(wB[r] + 4 * d);
            }
        }
    }
    enter_after_prior_grid();
#pragma unroll
    for (int d = 0; d < D; d++) {
        if (d < chunks) load_x_chunk(x, tokens, in, n0, d, xv[d]);
    }
    float acc[RT][MMA_LIN_TILES][4];
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int j = 0; j < MMA_LIN_TILES; j++) acc[r][j][0] = acc[r][j][1] = acc[r][j][2] = acc[r][j][3] = 0.f;
    store_x_chunk(xv[0], frag[0], tokens - n0);
    __syncthreads();
    for (int c0 = 0; c0 < chunks; c0 += D) {
#pragma unroll
        for (int d = 0; d < D; d++) {
            const int c = c0 + d;
            if (c >= chunks) break;
            uint4 a[RT], b[RT];
#pragma unroll
            for (int r = 0; r < RT; r++) {
                a[r] = pa[d][r];
                b[r] = pb[d][r];
            }
            if (c + D < chunks) {  // slot d's x went into shared memory an iteration ago; refill it with chunk c + D
#pragma unroll
                for (int r = 0; r < RT; r++) {
                    pa[d][r] = __ldg(wA[r] + 4 * (c + D));
                    pb[d][r] = __ldg(wB[r] + 4 * (c + D));
                }
                load_x_chunk(x, tokens, in, n0, c + D, xv[d]);
            }
            const uint4* f = frag[c & 1];
#pragma unroll
            for (int j = 0; j < MMA_LIN_TILES; j++) {
                if (n0 + 8 * j >= tokens) break;
                const uint4 hi = f[32 * j + lane], lo = f[MMA_LIN_TILES * 32 + 32 * j + lane];
#pragma unroll
                for (int r = 0; r < RT; r++) {
                    // k-step s: MMA k 2t,2t+1 <- columns 8t+4s+{0,1}; k 2t+8,2t+9 <- columns 8t+4s+{2,3}
                    mma_bf16(acc[r][j], a[r].x, b[r].x, a[r].y, b[r].y, hi.x, hi.y);
                    mma_bf16(acc[r][j], a[r].x, b[r].x, a[r].y, b[r].y, lo.x, lo.y);
                    mma_bf16(acc[r][j], a[r].z, b[r].z, a[r].w, b[r].w, hi.z, hi.w);
                    mma_bf16(acc[r][j], a[r].z, b[r].z, a[r].w, b[r].w, lo.z, lo.w);
                }
            }
            // the next chunk's x (slot d + 1) into the other buffer: free since the last barrier
            if (c + 1 < chunks) store_x_chunk(xv[(d + 1) % D], frag[(c + 1) & 1], tokens - n0);
            __syncthreads();  // the next chunk staged; this one's buffer free for the chunk after
        }
    }
#pragma unroll
    for (int r = 0; r < RT; r++) {
#pragma unroll
        for (int j = 0; j < MMA_LIN_TILES; j++) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                // c0, c1: row g, tokens 2t, 2t + 1; c2, c3: row g + 8
                const int row = row0 + 16 * r + g + (i >= 2 ? 8 : 0);
                const int token = n0 + 8 * j + 2 * t + (i & 1);
                if (row < out && token < tokens) {
                    if (gridDim.z > 1) {  // this slice's sums; model_linear_slices adds them up
                        partials[((long long) blockIdx.z * tokens + token) * out + row] = acc[r][j][i];
                    } else {
                        float* dst = y + (long long) token * out + row;
                        *dst = (accumulate ? *dst : 0.f) + acc[r][j][i] + (bias == nullptr ? 0.f : bias[row]);
                    }
                }
            }
        }
    }
}

// y = (y if accumulate) + the K slices' sums of model_linear_bf16_mma (partials [slices][tokens][out], added in
// slice order) + bias. grid: ceil(tokens * out / 256); block: 256
extern "C" __global__ void model_linear_slices(const float* __restrict__ partials, int slices,
                                               const float* __restrict__ bias, float* __restrict__ y, int tokens,
                                               int out, int accumulate) {
    enter_after_prior_grid();
    const long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x;
    const long long n = (long long) tokens * out;
    if (i >= n) return;
    float v = 0.f;
    for (int z = 0; z < slices; z++) v += partials[z * n + i];
    const int row = (int) (i % out);
    y[i] = (accumulate ? y[i] : 0.f) + v + (bias == nullptr ? 0.f : bias[row]);
}

// model_linear_bf16_mma for batches too small to fill the GPU with 64-row blocks (a decode batch of up to 64 tokens
// through an attention linear: 45-80 blocks on 132 multiprocessors): a block is 16 rows, its MMA_LIN_WARPS warps
// split K (chunks of 32 columns, interleaved) and add their partial tiles in a fixed order; each warp splits its own
// x chunks. grid: ceil(out / 16); block: 32 MMA_LIN_WARPS.
extern "C" __global__ void __launch_bounds__(32 * MMA_LIN_WARPS)
model_linear_bf16_mma_split(const float* __restrict__ x, const u16* __restrict__ w, const float* __restrict__ bias,
                      float* __restrict__ y, int tokens, int in, int out, int accumulate) {
    enter_after_prior_grid();
    __shared__ float red[MMA_LIN_WARPS - 1][MMA_LIN_TILES][4][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int row0 = blockIdx.x * 16;
    const int rA = min(row0 + g, out - 1), rB = min(row0 + g + 8, out - 1); // rows past the end: computed, not stored
    const uint4* wA = (const uint4*) (w + (long long) rA * in);
    const uint4* wB = (const uint4*) (w + (long long) rB * in);
    const int chunks = in >> 5;
    for (int n0 = 0; n0 < tokens; n0 += 8 * MMA_LIN_TILES) {
        float acc[MMA_LIN_TILES][4];
#pragma unroll
        for (int j = 0; j < MMA_LIN_TILES; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
        for (int c = warp; c < chunks; c += MMA_LIN_WARPS) {
            const uint4 pa = __ldg(wA + 4 * c + t);  // columns 32c + 8t .. + 8 of row g
            const uint4 pb = __ldg(wB + 4 * c + t);  // ... of row g + 8
#pragma unroll
            for (int j = 0; j < MMA_LIN_TILES; j++) {
                const int token = n0 + 8 * j + g;
                if (n0 + 8 * j >= tokens) break;
                float v[8];
                if (token < tokens) {
                    const float4* xr = (const float4*) (x + (long long) token * in + 32 * c + 8 * t);
                    const float4 p = xr[0], q = xr[1];
                    v[0] = p.x; v[1] = p.y; v[2] = p.z; v[3] = p.w; v[4] = q.x; v[5] = q.y; v[6] = q.z; v[7] = q.w;
                } else {
#pragma unroll
                    for (int i = 0; i < 8; i++) v[i] = 0.f;
                }
                u32 hi[4], lo[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float h0 = bf16_round(v[2 * i]), h1 = bf16_round(v[2 * i + 1]);
                    hi[i] = pack_bf16(h0, h1);
                    lo[i] = pack_bf16(v[2 * i] - h0, v[2 * i + 1] - h1);
                }
                // k-step s: MMA k 2t,2t+1 <- columns 8t+4s+{0,1}; k 2t+8,2t+9 <- columns 8t+4s+{2,3}
                mma_bf16(acc[j], pa.x, pb.x, pa.y, pb.y, hi[0], hi[1]);
                mma_bf16(acc[j], pa.x, pb.x, pa.y, pb.y, lo[0], lo[1]);
                mma_bf16(acc[j], pa.z, pb.z, pa.w, pb.w, hi[2], hi[3]);
                mma_bf16(acc[j], pa.z, pb.z, pa.w, pb.w, lo[2], lo[3]);
            }
        }
        if (warp > 0) {
#pragma unroll
            for (int j = 0; j < MMA_LIN_TILES; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) red[warp - 1][j][i][lane] = acc[j][i];
        }
        __syncthreads();
        if (warp == 0) {
#pragma unroll
            for (int j = 0; j < MMA_LIN_TILES; j++) {
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    float v = acc[j][i];
#pragma unroll
                    for (int o = 0; o < MMA_LIN_WARPS - 1; o++) v += red[o][j][i][lane];
                    // c0, c1: row g, tokens 2t, 2t + 1; c2, c3: row g + 8
                    const int row = row0 + g + (i >= 2 ? 8 : 0);
                    const int token = n0 + 8 * j + 2 * t + (i & 1);
                    if (row < out && token < tokens) {
                        float* dst = y + (long long) token * out + row;
                        *dst = (accumulate ? *dst : 0.f) + v + (bias == nullptr ? 0.f : bias[row]);
                    }
                }
            }
        }
        __syncthreads();
    }
}

// What happens to a q or k head between the q|k|v linear and attention, in the families' order: a weighted RMSNorm
// of the head (normMode 1: Qwen3's q_norm / k_norm), RoPE (none on NoPE layers: cosTable null), a weightless RMSNorm
// (normMode 2: Llama-4's L2 norm), and for query heads Llama-4's temperature log1p(floor((p + 1) / floorScale)) *
// attnScale + 1 (floorScale > 0). A k head's block then writes the k and its matching v head into the cache row of
// its position ([k | v], kvHeads * headDim each). Rows of qkv are [q heads | k heads | v heads] of one token; cos/sin
// are [position, headDim / 2] with the attention factor applied. The norms' sums of squares are float64, as the host
// RmsNorm's. grid: (tokens, heads + kvHeads); block: headDim / 2 rounded up to a warp (a pair of dimensions a thread)
extern "C" __global__ void model_position_rows(float* __restrict__ qkv, int heads, int kvHeads, int headDim,
                                               const float* __restrict__ cosTable, const float* __restrict__ sinTable,
                                               int interleaved, int normMode, const float* __restrict__ qNorm,
                                               const float* __restrict__ kNorm, float eps, double floorScale,
                                               double attnScale, const long long* __restrict__ positions,
                                               const unsigned long long* __restrict__ caches, int perRow,
                                               int early) {
    allow_next_grid_if(early);
    const int t = blockIdx.x;
    const int head = blockIdx.y;
    const int half = headDim >> 1;
    const int i = threadIdx.x;
    const bool active = i < half;
    const int a = interleaved ? 2 * i : i;
    const int b = interleaved ? a + 1 : i + half;
    // the tables and the weights before the wait (no kernel writes them)
    const long long pos = load_l2(positions + t);
    float* cache = head >= heads ? row_cache(caches, perRow, t) : nullptr;
    const bool rotate = cosTable != nullptr && active;
    const float c = rotate ? cosTable[pos * half + i] : 1.f;
    const float s = rotate ? sinTable[pos * half + i] : 0.f;
    const float* w = head < heads ? qNorm : kNorm;
    const float w1 = normMode == 1 && active ? w[a] : 1.f;
    const float w2 = normMode == 1 && active ? w[b] : 1.f;
    enter_after_prior_grid();
    float* h = qkv + (long long) t * (heads + 2 * kvHeads) * headDim + (long long) head * headDim;
    float x1 = active ? h[a] : 0.f;
    float x2 = active ? h[b] : 0.f;
    // normMode is one of the two norms or none, so the block's reduction runs at most once
    if (normMode == 1) {
        double inv = 1.0 / sqrt(block_sum_dbl((double) x1 * x1 + (double) x2 * x2) / headDim + (double) eps);
        x1 = w1 * (float) (x1 * inv);
        x2 = w2 * (float) (x2 * inv);
    }
    if (rotate) {
        float r1 = x1 * c - x2 * s;
        float r2 = x2 * c + x1 * s;
        x1 = r1;
        x2 = r2;
    }
    if (normMode == 2) {
        double inv = 1.0 / sqrt(block_sum_dbl((double) x1 * x1 + (double) x2 * x2) / headDim + (double) eps);
        x1 = (float) (x1 * inv);
        x2 = (float) (x2 * inv);
    }
    if (floorScale > 0.0 && head < heads) {
        float f = (float) (log1p(floor((pos + 1.0) / floorScale)) * attnScale + 1.0);
        x1 *= f;
        x2 *= f;
    }
    if (!active) return;
    h[a] = x1;
    h[b] = x2;
    if (cache != nullptr) {
        int kvh = head - heads;
        int width = kvHeads * headDim;
        float* k = cache + pos * 2LL * width + (long long) kvh * headDim;
        const float* v = h + (long long) kvHeads * headDim;  // the matching v head
        k[a] = x1;
        k[b] = x2;
        k[width + a] = v[a];
        k[width + b] = v[b];
    }
}

// Grouped-query attention of each (token row, head) over its sequence's cache ([position][k | v], written for this
// pass's rows by model_position_rows), into out [tokens, heads * headDim]; q: token rows qStride floats apart. A block
// takes one token row, one kv head and the query heads that share it (group = heads / kvHeads, at most GQA_WARPS),
// over one piece of the row's visible span [first_visible, position]: the span is cut into at most gridDim.z pieces
// of whole tiles (at least GQA_MIN_TILES each), so that a decode step of a few rows still fills the device and a
// long context is read by many blocks at once, and the kv head's keys and values are read once for all its query
// heads, a tile of positions at a time into shared memory (cp.async, the next tile loading while this one is used).
// Warp w takes head w % group; a group smaller than GQA_WARPS gives each head several warps, which take every
// n-th position of a tile and are merged in the block. A piece's online softmax per head (running maximum, sum,
// weighted values) goes to `partials` [token][head][piece][headDim + 2], and the block that arrives last for
// (token, kv head) (`arrivals`: counters that start at zero and are left at zero) merges the pieces, the head's
// sink logit (if any) joining the denominator; a span of one piece is finished by its block.
// headDim: a multiple of 4, at most HEAD_DIM_MAX. grid: (tokens, kvHeads, pieces); block: 32 * GQA_WARPS
#define GQA_WARPS 16
#define GQA_TILE_FLOATS 2048  // keys of a tile (and as many values), double-buffered: 32 KB of shared memory
#define GQA_MIN_TILES 4
#define GQA_PIECES_MAX 64
// Positions a warp of model_attend_rows takes a step. H200, gpt-oss-20b shapes, batch-1 greedy decode after 8000
// positions: 2.81-2.90 ms with 2 a step, 2.73-2.74 with 8 (which spills a few registers at the 64 that two blocks a
// multiprocessor leave), 2.82-2.88 with 4; after 16 positions no difference.
#define GQA_STEP 8
// GQA_HEAD_DIM (a define, optional): the kernel compiled for that head width only (the launch's headDim must equal
// it), so that a lane's loops over its dimensions run as many times as the head needs, not HEAD_DIM_MAX / 32 with
// the rest predicated off.

__device__ __forceinline__ float warp_max_f(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// A head's output, staged in shared memory (lane d wrote d), to out: through `next` first unless QDQ_NONE, by the
// warp (qdq_span with its 32 lanes: the rule's groups lie within the head, DeviceLinear.headsPrepareInput).
__device__ __forceinline__ void store_head(float* staged, float* out, int headDim, int lane, const Qdq& next) {
    if (next.kind != QDQ_NONE) {
        __syncwarp();
        qdq_span(staged, headDim, next, 0, nullptr, lane, 32);
        __syncwarp();
    }
    for (int d = lane; d < headDim; d += 32) out[d] = staged[d];
}

extern "C" __global__ void __launch_bounds__(32 * GQA_WARPS)
model_attend_rows(const float* __restrict__ q, int qStride, const unsigned long long* __restrict__ caches, int perRow,
                  const float* __restrict__ sinks, float* __restrict__ out, const long long* __restrict__ positions,
                  int heads, int kvHeads, int headDim, int window, float scale, float* __restrict__ partials,
                  int* __restrict__ arrivals, int early, int qKind, int qElem, int qGroup,
                  const float* __restrict__ qScale, const int* __restrict__ qZero) {
    allow_next_grid_if(early);
    __shared__ __align__(16) float sTiles[4 * GQA_TILE_FLOATS];  // keys [2][tile], then values [2][tile]
    // the next linear's input rule (o's), applied to each head's output as it is written when not QDQ_NONE: a rule
    // local to a head's values (DeviceLinear.headsPrepareInput), so its own input stage goes
    const Qdq next = {qKind, qElem, qGroup, qScale, qZero};
    __shared__ float sWeights[GQA_WARPS][GQA_PIECES_MAX];
    __shared__ int sLast;
#ifdef GQA_HEAD_DIM
    // compiled for one head width: the loops over a lane's dimensions unrolled to the head's, their bounds known
    headDim = GQA_HEAD_DIM;
    const int per = (GQA_HEAD_DIM + 31) / 32;
#else
    const int per = HEAD_DIM_MAX / 32;
#endif
    const int t = blockIdx.x, kvh = blockIdx.y, piece = blockIdx.z;
    const long long position = load_l2(positions + t);
    const float* cache = row_cache(caches, perRow, t);
    enter_after_prior_grid();
    const int tile = GQA_TILE_FLOATS / headDim;
    const long long from = first_visible(position, window);
    const long long span = position - from + 1;
    long long chunk = (span + gridDim.z - 1) / gridDim.z;
    if (chunk < (long long) GQA_MIN_TILES * tile) chunk = (long long) GQA_MIN_TILES * tile;
    chunk = (chunk + tile - 1) / tile * tile;
    const int pieces = (int) ((span + chunk - 1) / chunk);  // the pieces that hold positions: at most gridDim.z
    if (piece >= pieces) return;
    const long long lo = from + piece * chunk;
    const long long hi = lo + chunk < position + 1 ? lo + chunk : position + 1;

    const int group = heads / kvHeads;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int warpsPerHead = GQA_WARPS / group;  // warps past group * warpsPerHead (a group of 5: 15) hold no head
    const int g = warp % group, sub = warp / group;
    const bool active = sub < warpsPerHead;
    const int h = kvh * group + g;
    const int width = kvHeads * headDim;
    float qv[per], acc[per];
    const float* qh = q + (long long) t * qStride + (long long) h * headDim;
#pragma unroll
    for (int i = 0; i < per; i++) {
        int d = lane + 32 * i;
        qv[i] = active && d < headDim ? qh[d] : 0.f;
        acc[i] = 0.f;
    }
    float m = NEG_INF_F, l = 0.f;

    // tile `k` of the piece into buffer k & 1: 16 bytes a thread at a time, keys and values
    const int quads = headDim >> 2;
    auto load = [&](long long base, int buffer) {
        int n = (int) (hi - base < tile ? hi - base : tile);
        float* sk = sTiles + buffer * GQA_TILE_FLOATS;
        float* sv = sTiles + (2 + buffer) * GQA_TILE_FLOATS;
        for (int i = threadIdx.x; i < n * quads; i += blockDim.x) {
            int j = i / quads, c = (i - j * quads) << 2;
            const float* row = cache + (base + j) * 2LL * width + (long long) kvh * headDim + c;
            cp_async16(sk + j * headDim + c, row);
            cp_async16(sv + j * headDim + c, row + width);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    load(lo, 0);
    int buffer = 0;
    for (long long base = lo; base < hi; base += tile, buffer ^= 1) {
        if (base + tile < hi) {
            load(base + tile, buffer ^ 1);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();
        const int n = (int) (hi - base < tile ? hi - base : tile);
        const float* sk = sTiles + buffer * GQA_TILE_FLOATS;
        const float* sv = sTiles + (2 + buffer) * GQA_TILE_FLOATS;
        if (active) {
            // GQA_STEP positions a step: their dot products, shuffle trees and exponentials are independent chains
            // that interleave (a decode row over a short span is bound by the latency of these, not by its bytes)
            int j = sub;
            for (; j + (GQA_STEP - 1) * warpsPerHead < n; j += GQA_STEP * warpsPerHead) {
                float sc[GQA_STEP];
#pragma unroll
                for (int u = 0; u < GQA_STEP; u++) {
                    const float* ku = sk + (j + u * warpsPerHead) * headDim;
                    float su = 0.f;
#pragma unroll
                    for (int i = 0; i < per; i++) {
                        int d = lane + 32 * i;
                        if (d < headDim) su = fmaf(qv[i], ku[d], su);
                    }
                    sc[u] = su;
                }
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) {
#pragma unroll
                    for (int u = 0; u < GQA_STEP; u++) sc[u] += __shfl_xor_sync(0xffffffffu, sc[u], o);
                }
                float mNew = m;
#pragma unroll
                for (int u = 0; u < GQA_STEP; u++) {
                    sc[u] *= scale;
                    mNew = fmaxf(mNew, sc[u]);
                }
                const float correction = __expf(m - mNew);
                float sum = 0.f;
#pragma unroll
                for (int u = 0; u < GQA_STEP; u++) {
                    sc[u] = __expf(sc[u] - mNew);
                    sum += sc[u];
                }
                l = l * correction + sum;
#pragma unroll
                for (int i = 0; i < per; i++) {
                    int d = lane + 32 * i;
                    if (d < headDim) {
                        float a = acc[i] * correction;
#pragma unroll
                        for (int u = 0; u < GQA_STEP; u++) a = fmaf(sc[u], sv[(j + u * warpsPerHead) * headDim + d], a);
                        acc[i] = a;
                    }
                }
                m = mNew;
            }
            for (; j < n; j += warpsPerHead) {
                const float* k0 = sk + j * headDim;
                float s0 = 0.f;
#pragma unroll
                for (int i = 0; i < per; i++) {
                    int d = lane + 32 * i;
                    if (d < headDim) s0 = fmaf(qv[i], k0[d], s0);
                }
                s0 = warp_sum_f(s0) * scale;
                float mNew = fmaxf(m, s0);
                float correction = __expf(m - mNew);
                float p0 = __expf(s0 - mNew);
                l = l * correction + p0;
                const float* v0 = sv + j * headDim;
#pragma unroll
                for (int i = 0; i < per; i++) {
                    int d = lane + 32 * i;
                    if (d < headDim) acc[i] = acc[i] * correction + p0 * v0[d];
                }
                m = mNew;
            }
        }
        __syncthreads();  // before the next load overwrites this buffer
    }

    // a head's warps merged in the block (their slots in the tiles' memory), then this piece's entry goes to
    // partials, or, for a span of one piece, the output
    const int stride = headDim + 2;
    if (active) {
        float* slot = sTiles + warp * stride;
        if (lane == 0) {
            slot[0] = m;
            slot[1] = l;
        }
#pragma unroll
        for (int i = 0; i < per; i++) {
            int d = lane + 32 * i;
            if (d < headDim) slot[2 + d] = acc[i];
        }
    }
    __syncthreads();
    if (active && sub == 0) {
        float top = NEG_INF_F;
        for (int w = g; w < group * warpsPerHead; w += group) {
            if (sTiles[w * stride + 1] > 0.f) top = fmaxf(top, sTiles[w * stride]);
        }
        float sum = 0.f;
        for (int w = g; w < group * warpsPerHead; w += group) {
            float lw = sTiles[w * stride + 1];
            if (lw > 0.f) sum += lw * __expf(sTiles[w * stride] - top);
        }
        const float* sink = sinks == nullptr ? nullptr : sinks + h;
        const float mx = pieces > 1 || sink == nullptr ? top : fmaxf(top, *sink);
        const float den = sum * __expf(top - mx) + (pieces > 1 || sink == nullptr ? 0.f : __expf(*sink - mx));
        float* entry = partials + (((long long) t * heads + h) * gridDim.z + piece) * stride;
        float* own = sTiles + warp * stride + 2;  // this warp's slot (warp == g): lane d reads and writes only d
        for (int d = lane; d < headDim; d += 32) {
            float v = 0.f;
            for (int w = g; w < group * warpsPerHead; w += group) {
                float lw = sTiles[w * stride + 1];
                if (lw > 0.f) v += sTiles[w * stride + 2 + d] * __expf(sTiles[w * stride] - top);
            }
            if (pieces > 1) {
                entry[2 + d] = v;
            } else {
                own[d] = v * __expf(top - mx) / den;
            }
        }
        if (pieces > 1 && lane == 0) {
            entry[0] = top;
            entry[1] = sum;
        }
        if (pieces == 1) store_head(own, out + ((long long) t * heads + h) * headDim, headDim, lane, next);
    }
    if (pieces == 1) return;

    // the last block of (token, kv head) to arrive merges the pieces of its heads, a warp a head: lanes over the
    // pieces for their weights, then over the dimensions
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        int* counter = arrivals + (long long) t * kvHeads + kvh;
        sLast = atomicAdd(counter, 1) == pieces - 1;
        if (sLast) *counter = 0;  // every piece of this pass has arrived: ready for the next
    }
    __syncthreads();
    if (!sLast || warp >= group) return;
    __threadfence();
    const float* entries = partials + ((long long) t * heads + h) * gridDim.z * stride;
    const float* sink = sinks == nullptr ? nullptr : sinks + h;
    float me[2], le[2];
    float top = sink == nullptr ? NEG_INF_F : *sink;
#pragma unroll
    for (int k = 0; k < 2; k++) {
        int e = lane + 32 * k;
        le[k] = e < pieces ? __ldcg(entries + (long long) e * stride + 1) : 0.f;
        me[k] = e < pieces ? __ldcg(entries + (long long) e * stride) : NEG_INF_F;
        if (le[k] > 0.f) top = fmaxf(top, me[k]);
    }
    top = warp_max_f(top);
    float part = 0.f;
#pragma unroll
    for (int k = 0; k < 2; k++) {
        int e = lane + 32 * k;
        float f = le[k] > 0.f ? __expf(me[k] - top) : 0.f;
        if (e < GQA_PIECES_MAX) sWeights[warp][e] = f;
        part += le[k] * f;
    }
    const float den = warp_sum_f(part) + (sink == nullptr ? 0.f : __expf(*sink - top));
    __syncwarp();
    float* own = sTiles + warp * stride + 2;  // free since the block's barrier above
    for (int d = lane; d < headDim; d += 32) {
        float v = 0.f;
        for (int e = 0; e < pieces; e++) v += __ldcg(entries + (long long) e * stride + 2 + d) * sWeights[warp][e];
        own[d] = v / den;
    }
    store_head(own, out + ((long long) t * heads + h) * headDim, headDim, lane, next);
}

// DeepSeek's multi-head latent attention, after q_b_proj (q [tokens, heads, nope + rope]) and kv_a_proj_with_mqa
// (latent [tokens, lora + rope]): block (t, h < heads) rotates the rope part of query head h; block (t, heads)
// normalizes the latent's first `lora` values (kv_a_layernorm, sum of squares in float64) into latentOut [t][lora]
// for kv_b_proj and rotates the rope key (the latent row's last `rope` values) into the start of the cache row of
// its position (rows rope + lora floats: the rope key, then the latent as kv_b_proj reads it, from
// model_mla_store_rows). cos/sin are [position, rope / 2]. grid: (tokens, heads + 1); block: 256
extern "C" __global__ void model_mla_position_rows(float* __restrict__ q, int heads, int nope, int rope,
                                                   const float* __restrict__ latent, int lora,
                                                   const float* __restrict__ normWeight, float eps,
                                                   float* __restrict__ latentOut, const float* __restrict__ cosTable,
                                                   const float* __restrict__ sinTable, int interleaved,
                                                   const long long* __restrict__ positions,
                                                   const unsigned long long* __restrict__ caches, int perRow,
                                                   int rowWidth) {
    const int t = blockIdx.x;
    const int half = rope >> 1;
    const long long pos = load_l2(positions + t);
    float* cache = row_cache(caches, perRow, t);
    enter_after_prior_grid();
    if ((int) blockIdx.y < heads) {
        float* r = q + ((long long) t * heads + blockIdx.y) * (nope + rope) + nope;
        for (int i = threadIdx.x; i < half; i += blockDim.x) {
            int a = interleaved ? 2 * i : i;
            int b = interleaved ? a + 1 : i + half;
            float c = cosTable[pos * half + i], s = sinTable[pos * half + i];
            float x1 = r[a], x2 = r[b];
            r[a] = x1 * c - x2 * s;
            r[b] = x2 * c + x1 * s;
        }
        return;
    }
    const float* lat = latent + (long long) t * (lora + rope);
    double sum = 0;
    for (int i = threadIdx.x; i < lora; i += blockDim.x) sum += (double) lat[i] * lat[i];
    double inv = 1.0 / sqrt(block_sum_dbl(sum) / lora + (double) eps);
    float* o = latentOut + (long long) t * lora;
    for (int i = threadIdx.x; i < lora; i += blockDim.x) o[i] = normWeight[i] * (float) (lat[i] * inv);
    float* k = cache + pos * (long long) rowWidth;
    const float* kr = lat + lora;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        int a = interleaved ? 2 * i : i;
        int b = interleaved ? a + 1 : i + half;
        float c = cosTable[pos * half + i], s = sinTable[pos * half + i];
        float x1 = kr[a], x2 = kr[b];
        k[a] = x1 * c - x2 * s;
        k[b] = x2 * c + x1 * s;
    }
}

// Each token row's normalized latent as kv_b_proj reads it (after the scheme's quantize-dequantize and column order,
// width floats) into the cache row of its position, after the rope key. grid: tokens; block: 256
extern "C" __global__ void model_mla_store_rows(const float* __restrict__ kv, int width, int rope,
                                                const long long* __restrict__ positions,
                                                const unsigned long long* __restrict__ caches, int perRow) {
    const int t = blockIdx.x;
    float* dst = row_cache(caches, perRow, t) + load_l2(positions + t) * (long long) (rope + width) + rope;
    enter_after_prior_grid();
    const float* src = kv + (long long) t * width;
    for (int i = threadIdx.x; i < width; i += blockDim.x) dst[i] = src[i];
}

// Multi-head latent attention of each (token row, head) over its sequence's latent cache (rows [rope key | latent],
// this pass's rows written by model_mla_position_rows and model_mla_store_rows), with kv_b_proj taken into the query
// and the output: w is kv_b_proj as float32 rows [heads * (nope + vDim), lora] in the cached latents' column order,
// head h's rows its key's no-rope part W_UK (nope rows), then its value W_UV (vDim rows). The block
//   1. takes q_nope into the latent: qLat = q_nope . W_UK[h] (lora values, one a thread);
//   2. runs the online softmax of (qLat . latent_j + q_rope . rope_j) * scale over positions 0 .. its own, each warp
//      every ATTEND_WARPS-th position, a lane holding latent dimensions lane, lane + 32, ...;
//   3. merges the warps' sums into the attended latent (softmax-weighted sum of latents);
//   4. writes out[m] = W_UV[h] row m . that latent, a warp a row.
// The cache then holds lora + rope floats a position instead of heads * (nope + vDim), and a decode step reads it
// once per head instead of expanding every position through kv_b_proj.
// lora <= LATENT_MAX, rope <= LATENT_ROPE_MAX, nope <= HEAD_DIM_MAX. grid: (tokens, heads); block: 32 * ATTEND_WARPS
#define LATENT_MAX 512
#define LATENT_ROPE_MAX 64
extern "C" __global__ void __launch_bounds__(32 * ATTEND_WARPS)
model_attend_latent_rows(const float* __restrict__ q, const float* __restrict__ w,
                         const unsigned long long* __restrict__ caches, int perRow, float* __restrict__ out,
                         const long long* __restrict__ positions, int heads, int nope, int rope, int vDim, int lora,
                         float scale, int qKind, int qElem, int qGroup, const float* __restrict__ qScale,
                         const int* __restrict__ qZero) {
    // o_proj's input rule, applied to the head's output as it is written when not QDQ_NONE (a rule local to a
    // head's values, vDim <= LATENT_MAX: DeviceLinear.headsPrepareInput), so that o_proj's input stage goes
    const Qdq next = {qKind, qElem, qGroup, qScale, qZero};
    __shared__ float sQuery[LATENT_MAX + LATENT_ROPE_MAX];  // the latent query, then the rope query
    __shared__ float sNope[HEAD_DIM_MAX];
    __shared__ float sMax[ATTEND_WARPS];
    __shared__ float sSum[ATTEND_WARPS];
    __shared__ float sAcc[ATTEND_WARPS][LATENT_MAX];
    const int per = LATENT_MAX / 32;
    const int ropePer = LATENT_ROPE_MAX / 32;
    const int t = blockIdx.x;
    const int h = blockIdx.y;
    const long long position = load_l2(positions + t);
    const float* cache = row_cache(caches, perRow, t);
    const int headRows = nope + vDim;
    const float* wk = w + (long long) h * headRows * lora;   // W_UK[h]: nope rows of lora
    const float* wv = wk + (long long) nope * lora;          // W_UV[h]: vDim rows of lora
    enter_after_prior_grid();
    const float* qh = q + ((long long) t * heads + h) * (nope + rope);
    for (int i = threadIdx.x; i < nope; i += blockDim.x) sNope[i] = qh[i];
    for (int i = threadIdx.x; i < rope; i += blockDim.x) sQuery[LATENT_MAX + i] = qh[nope + i];
    __syncthreads();
    for (int c = threadIdx.x; c < lora; c += blockDim.x) {
        float a = 0.f;
        for (int i = 0; i < nope; i++) a = fmaf(sNope[i], wk[(long long) i * lora + c], a);
        sQuery[c] = a;
    }
    __syncthreads();

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float qv[per], qr[ropePer], acc[per];
#pragma unroll
    for (int i = 0; i < per; i++) {
        int c = lane + 32 * i;
        qv[i] = c < lora ? sQuery[c] : 0.f;
        acc[i] = 0.f;
    }
#pragma unroll
    for (int i = 0; i < ropePer; i++) {
        int d = lane + 32 * i;
        qr[i] = d < rope ? sQuery[LATENT_MAX + d] : 0.f;
    }
    const long long rowWidth = rope + lora;
    float m = NEG_INF_F, l = 0.f;
    for (long long j = warp; j <= position; j += ATTEND_WARPS) {
        const float* row = cache + j * rowWidth;
        const float* lat = row + rope;
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < ropePer; i++) {
            int d = lane + 32 * i;
            if (d < rope) s = fmaf(qr[i], row[d], s);
        }
        float lv[per];
#pragma unroll
        for (int i = 0; i < per; i++) {
            int c = lane + 32 * i;
            lv[i] = c < lora ? lat[c] : 0.f;
            s = fmaf(qv[i], lv[i], s);
        }
        s = warp_sum_f(s) * scale;
        float mNew = fmaxf(m, s);
        float correction = __expf(m - mNew);
        float p = __expf(s - mNew);
        l = l * correction + p;
#pragma unroll
        for (int i = 0; i < per; i++) acc[i] = acc[i] * correction + p * lv[i];
        m = mNew;
    }
    if (lane == 0) {
        sMax[warp] = m;
        sSum[warp] = l;
    }
#pragma unroll
    for (int i = 0; i < per; i++) {
        int c = lane + 32 * i;
        if (c < lora) sAcc[warp][c] = acc[i];
    }
    __syncthreads();
    // every thread merges the warps' statistics (ATTEND_WARPS values) and its own latent dimensions
    float total = NEG_INF_F;
    for (int k = 0; k < ATTEND_WARPS; k++) total = fmaxf(total, sMax[k]);
    float f[ATTEND_WARPS];
    float denominator = 0.f;
    for (int k = 0; k < ATTEND_WARPS; k++) {
        f[k] = sSum[k] > 0.f ? __expf(sMax[k] - total) : 0.f;
        denominator += sSum[k] * f[k];
    }
    for (int c = threadIdx.x; c < lora; c += blockDim.x) {
        float v = 0.f;
        for (int k = 0; k < ATTEND_WARPS; k++) v += sAcc[k][c] * f[k];
        sQuery[c] = v / denominator;  // the query is in registers now: its slot takes the attended latent
    }
    __syncthreads();
    float* o = out + ((long long) t * heads + h) * vDim;
    float* staged = sAcc[0];  // read for the last time before the barrier above
    for (int r = warp; r < vDim; r += ATTEND_WARPS) {
        const float* wr = wv + (long long) r * lora;
        float a = 0.f;
        for (int c = lane; c < lora; c += 32) a = fmaf(wr[c], sQuery[c], a);
        a = warp_sum_f(a);
        if (lane == 0) {
            if (next.kind == QDQ_NONE) {
                o[r] = a;
            } else {
                staged[r] = a;
            }
        }
    }
    if (next.kind != QDQ_NONE) {
        __syncthreads();
        qdq_span(staged, vDim, next, 0, nullptr, threadIdx.x, blockDim.x);
        __syncthreads();
        for (int r = threadIdx.x; r < vDim; r += blockDim.x) o[r] = staged[r];
    }
}

// g = silu(g) * u elementwise (a dense MLP's gate and up), silu in float64 rounded to float as the host computes it.
// grid: ceil(n / 256); block: 256
extern "C" __global__ void model_silu_mul(float* __restrict__ g, const float* __restrict__ u, long long n) {
    enter_after_prior_grid();
    long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double x = g[i];
        g[i] = (float) (x / (1.0 + exp(-x))) * u[i];
    }
}

// Every one of n choices to expert 0 with weight 1: the shared experts' routing (each token through the one expert).
// grid: ceil(n / 256); block: 256
extern "C" __global__ void model_fill_choices(int* __restrict__ ids, float* __restrict__ weights, int n) {
    enter_after_prior_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        ids[i] = 0;
        weights[i] = 1.0f;
    }
}

// Rows of x [rows, na + nb] split into a [rows, na] and b [rows, nb]: a stacked linear's output (DeepSeek's q_a|kv_a)
// for the kernels that read each part as rows of its own width. grid: rows; block: 256
extern "C" __global__ void model_split_rows(const float* __restrict__ x, float* __restrict__ a, int na,
                                            float* __restrict__ b, int nb) {
    enter_after_prior_grid();
    const float* src = x + (long long) blockIdx.x * (na + nb);
    for (int i = threadIdx.x; i < na + nb; i += blockDim.x) {
        if (i < na) {
            a[(long long) blockIdx.x * na + i] = src[i];
        } else {
            b[(long long) blockIdx.x * nb + i - na] = src[i];
        }
    }
}

// out[i] = x[rows[i]] for rows of n floats: the last row of each sequence of a batch, for lm_head.
// grid: count; block: 256
extern "C" __global__ void model_gather_rows(const float* __restrict__ x, const int* __restrict__ rows,
                                             float* __restrict__ out, int n) {
    const int row = load_l2(rows + blockIdx.x);  // the table, before the wait
    enter_after_prior_grid();
    const float* src = x + (long long) row * n;
    float* dst = out + (long long) blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// logits[t, e] = sum_i x[t, i] * w[e, i] (+ bias[e]) in float64 (exact float products). One block per (expert,
// token): a decode step's router is on the critical path and bound by load latency, so the router row (which no
// kernel writes) is loaded into registers before waiting for the kernel before, and x's loads go out all at once.
// grid: (experts, tokens); block: ROUTER_THREADS
#define ROUTER_THREADS 128
#define ROUTER_HOLD 8  // float4 of the router row a thread holds: rows up to 4096 columns
extern "C" __global__ void __launch_bounds__(ROUTER_THREADS)
model_router_logits(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                    double* __restrict__ logits, int experts, int hidden, int early) {
    allow_next_grid_if(early);
    const int e = blockIdx.x;
    const float* xr = x + (long long) blockIdx.y * hidden;
    const float* wr = w + (long long) e * hidden;
    double s = 0;
    const int h4 = hidden >> 2;
    if ((hidden & 3) == 0 && h4 <= ROUTER_HOLD * ROUTER_THREADS) {
        float4 wv[ROUTER_HOLD];
#pragma unroll
        for (int k = 0; k < ROUTER_HOLD; k++) {
            int i = threadIdx.x + k * ROUTER_THREADS;
            wv[k] = i < h4 ? ((const float4*) wr)[i] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        enter_after_prior_grid();
#pragma unroll
        for (int k = 0; k < ROUTER_HOLD; k++) {
            int i = threadIdx.x + k * ROUTER_THREADS;
            if (i < h4) {
                float4 a = ((const float4*) xr)[i];
                s += (double) a.x * (double) wv[k].x + (double) a.y * (double) wv[k].y
                        + (double) a.z * (double) wv[k].z + (double) a.w * (double) wv[k].w;
            }
        }
    } else {
        enter_after_prior_grid();
        for (int i = threadIdx.x; i < hidden; i += ROUTER_THREADS) s += (double) xr[i] * (double) wr[i];
    }
    s = block_sum_dbl(s);
    if (threadIdx.x == 0) {
        logits[(long long) blockIdx.y * experts + e] = s + (bias == nullptr ? 0.0 : (double) bias[e]);
    }
}

// model_rms_norm of rows of h (no residual add) and model_router_logits of the normed rows in one kernel, for passes
// of a few rows (a decode step, where each kernel on the critical path costs its latency): every (expert, token)
// block normalises its token's row itself, with the same sums in the same order as every other block (so all agree
// on the normed row), takes its router dot product, and writes its share of the normed row into xn (float4 i where
// i % experts == e), the experts' input. weight (the norm's) may be null.
// grid: (experts, tokens); block: ROUTER_THREADS
extern "C" __global__ void __launch_bounds__(ROUTER_THREADS)
model_norm_router_logits(const float* __restrict__ h, const float* __restrict__ weight, float eps,
                         float* __restrict__ xn, const float* __restrict__ w, const float* __restrict__ bias,
                         double* __restrict__ logits, int experts, int hidden, int early) {
    allow_next_grid_if(early);
    const int e = blockIdx.x;
    const float* hr = h + (long long) blockIdx.y * hidden;
    float* out = xn + (long long) blockIdx.y * hidden;
    const float* wr = w + (long long) e * hidden;
    double dot = 0;
    const int h4 = hidden >> 2;
    if ((hidden & 3) == 0 && h4 <= ROUTER_HOLD * ROUTER_THREADS) {
        float4 wv[ROUTER_HOLD], nv[ROUTER_HOLD], v[ROUTER_HOLD];
#pragma unroll
        for (int k = 0; k < ROUTER_HOLD; k++) { // the router row and the norm's weight: no kernel writes them
            int i = threadIdx.x + k * ROUTER_THREADS;
            wv[k] = i < h4 ? ((const float4*) wr)[i] : make_float4(0.f, 0.f, 0.f, 0.f);
            nv[k] = weight != nullptr && i < h4 ? ((const float4*) weight)[i] : make_float4(1.f, 1.f, 1.f, 1.f);
        }
        enter_after_prior_grid();
        double sq = 0;
#pragma unroll
        for (int k = 0; k < ROUTER_HOLD; k++) {
            int i = threadIdx.x + k * ROUTER_THREADS;
            v[k] = i < h4 ? ((const float4*) hr)[i] : make_float4(0.f, 0.f, 0.f, 0.f);
            sq += (double) v[k].x * v[k].x + (double) v[k].y * v[k].y + (double) v[k].z * v[k].z
                    + (double) v[k].w * v[k].w;
        }
        const double inv = 1.0 / sqrt(block_sum_dbl(sq) / hidden + (double) eps);
        __syncthreads(); // block_sum_dbl's shared partials are read by every thread before the next sum writes them
#pragma unroll
        for (int k = 0; k < ROUTER_HOLD; k++) {
            int i = threadIdx.x + k * ROUTER_THREADS;
            if (i < h4) {
                float4 y;
                y.x = nv[k].x * (float) (v[k].x * inv); y.y = nv[k].y * (float) (v[k].y * inv);
                y.z = nv[k].z * (float) (v[k].z * inv); y.w = nv[k].w * (float) (v[k].w * inv);
                if (i % experts == e) ((float4*) out)[i] = y;
                dot += (double) y.x * (double) wv[k].x + (double) y.y * (double) wv[k].y
                        + (double) y.z * (double) wv[k].z + (double) y.w * (double) wv[k].w;
            }
        }
    } else {
        enter_after_prior_grid();
        double sq = 0;
        for (int i = threadIdx.x; i < hidden; i += ROUTER_THREADS) sq += (double) hr[i] * (double) hr[i];
        const double inv = 1.0 / sqrt(block_sum_dbl(sq) / hidden + (double) eps);
        __syncthreads();
        for (int i = threadIdx.x; i < hidden; i += ROUTER_THREADS) {
            float normed = (float) (hr[i] * inv);
            float y = weight == nullptr ? normed : weight[i] * normed;
            if (i % experts == e) out[i] = y;
            dot += (double) y * (double) wr[i];
        }
    }
    dot = block_sum_dbl(dot);
    if (threadIdx.x == 0) {
        logits[(long long) blockIdx.y * experts + e] = dot + (bias == nullptr ? 0.0 : (double) bias[e]);
    }
}

// out[r] = the index of the largest of row r of x ([rows, n]), the lowest index on ties: the host's greedy rule
// (io.moe4j.model.Logits.argmax, then TokenDraw's greedy draw), so that a greedy decode reads one id back instead of
// the vocabulary's logits. NaN is never chosen after the first value; the answer is -1 (no finite choice) where the
// host's scan would keep a NaN first value, where every value is NaN, or where the largest is -infinity.
// grid: rows; block: 1024
#define ARGMAX_THREADS 1024
__device__ __forceinline__ void argmax_take(float& best, int& at, float v, int i) {
    if (v > best || (v == best && i < at)) {
        best = v;
        at = i;
    }
}

extern "C" __global__ void __launch_bounds__(ARGMAX_THREADS)
model_argmax(const float* __restrict__ rows, int n, int* __restrict__ out) {
    enter_after_prior_grid();
    const float* x = rows + (long long) blockIdx.x * n;
    __shared__ float sBest[ARGMAX_THREADS / 32];
    __shared__ int sAt[ARGMAX_THREADS / 32];
    const int none = 0x7fffffff;
    float best = NEG_INF_F;
    int at = none;
    // a value beats the best so far when larger, or equal at a lower index; -infinity counts (at starts at none)
    const int n4 = n >> 2;
#pragma unroll 4
    for (int i = threadIdx.x; i < n4; i += ARGMAX_THREADS) {
        float4 v = ((const float4*) x)[i];
        argmax_take(best, at, v.x, 4 * i);
        argmax_take(best, at, v.y, 4 * i + 1);
        argmax_take(best, at, v.z, 4 * i + 2);
        argmax_take(best, at, v.w, 4 * i + 3);
    }
    for (int i = 4 * n4 + threadIdx.x; i < n; i += ARGMAX_THREADS) argmax_take(best, at, x[i], i);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ob = __shfl_xor_sync(0xffffffffu, best, o);
        int oa = __shfl_xor_sync(0xffffffffu, at, o);
        if (oa != none) argmax_take(best, at, ob, oa);
    }
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        sBest[warp] = best;
        sAt[warp] = at;
    }
    __syncthreads();
    if (warp == 0) {
        best = sBest[lane];
        at = sAt[lane];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float ob = __shfl_xor_sync(0xffffffffu, best, o);
            int oa = __shfl_xor_sync(0xffffffffu, at, o);
            if (oa != none) argmax_take(best, at, ob, oa);
        }
        if (lane == 0) out[blockIdx.x] = at == none || x[0] != x[0] || !(best > NEG_INF_F) ? -1 : at;
    }
}

// out[r] = a token drawn from row r of x ([rows, n]) by rules[r], the host's rule (io.moe4j.model.TokenDraw): the
// candidates are the finite logits (NaN and -infinity never drawn), ordered by logit, highest first, equal logits by
// lower id; their weights are exp((logit - top) / temperature); top-k keeps a prefix of k, top-p the shortest prefix
// whose weight reaches top_p of the top-k prefix's, min-p the tokens of weight at least min_p (the top's is 1); the
// draw walks the kept tokens in id order until `uniform` of their total weight is passed. -1 when there is no
// candidate, and for a rule of temperature 0 (a row of a batch that is not drawn here). The host sums float64
// exponentials; here float32 exponentials are summed in float64, so a draw differs from the host's only where
// uniform falls within float rounding of a boundary between two tokens (or top_p of one prefix's weight).
// A prefix is cut without sorting: the logits' order-preserving 32-bit keys are selected four bits a level (eight
// passes over the row), each thread counting and weighing its own elements per bin in shared memory (no atomics),
// until the key where the count or weight reaches the target is known, with how many of its equal-key tokens (by
// id) fall inside.
// grid: (blocks a row, rows), launched cooperatively (every block resident): a row's blocks meet at grid barriers
// (sample_grid_sync) between passes and combine their partial sums in block order, so every block takes the same
// decisions and a draw is the same on every run. block: SAMPLE_THREADS.
#define SAMPLE_THREADS 256
#define SAMPLE_BINS 16
#define SAMPLE_MAX_BLOCKS 64

struct SampleRule {      // io.moe4j.backend.cuda.ModelOps.DRAW_RULE_BYTES: 40 bytes, field order as here
    double uniform;      // [0, 1): where the draw lands in the kept weight
    double temperature;  // > 0; 0 skips the row
    double topP;         // (0, 1]
    double minP;         // [0, 1]
    int topK;            // 0: all
    int pad;
};

// A row's meeting place in device memory (ModelOps.SAMPLE_GRID_BYTES): the barrier (count starts at zero and every
// barrier leaves it so) and each block's partials, double-buffered by phase so that a block writing the next
// phase's never overwrites what a slower block still reads.
struct SampleGrid {
    unsigned count;
    unsigned generation;
    int binCount[2][SAMPLE_MAX_BLOCKS][SAMPLE_BINS];
    double binWeight[2][SAMPLE_MAX_BLOCKS][SAMPLE_BINS];
    double blockD[2][SAMPLE_MAX_BLOCKS];
    int blockI[2][SAMPLE_MAX_BLOCKS];
    unsigned blockU[2][SAMPLE_MAX_BLOCKS];
};

// order-preserving: a larger float has a larger key (-0 just below +0); no candidate has key 0 (a NaN's)
__device__ __forceinline__ u32 sample_key(float v) {
    u32 b = __float_as_uint(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float sample_value(u32 key) {
    return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

__device__ __forceinline__ bool sample_candidate(float v) {
    return v == v && v != NEG_INF_F;
}

// exp((v - top) / temperature); exactly 1 for the top (an infinite 1 / temperature must not make 0 * inf)
__device__ __forceinline__ float sample_weight(float v, float top, float invT) {
    float d = v - top;
    return d == 0.0f ? 1.0f : expf(d * invT);
}

// v's weight if the draw keeps it by key (at or above cutKey; the ties at cutKey are the caller's) and by min-p
// (floor: 0 for none), else -1; its key in k
__device__ __forceinline__ float sample_kept(float v, u32 cutKey, float top, float invT, float floor, u32& k) {
    if (!sample_candidate(v)) return -1.f;
    k = sample_key(v);
    if (k < cutKey) return -1.f;
    float w = sample_weight(v, top, invT);
    return w < floor ? -1.f : w;
}

// every block of the row waits here until all have arrived; what they wrote before is visible after
__device__ __forceinline__ void sample_grid_sync(SampleGrid* g) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned* generation = &g->generation;
        unsigned seen = *generation;
        __threadfence();
        if (atomicAdd(&g->count, 1u) == gridDim.x - 1) {
            atomicExch(&g->count, 0u);
            __threadfence();
            atomicAdd(&g->generation, 1u);
        } else {
            while (*generation == seen) __nanosleep(64);
        }
        __threadfence();
    }
    __syncthreads();
}

template <typename T> __device__ __forceinline__ T sample_block_max(T v, T* scratch) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        T other = __shfl_xor_sync(0xffffffffu, v, o);
        v = other > v ? other : v;
    }
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[0];
    for (int w = 1; w < SAMPLE_THREADS / 32; w++) v = scratch[w] > v ? scratch[w] : v;
    return v;
}

// the exclusive prefix sum of v over the block's threads, and the block's total
template <typename T> __device__ __forceinline__ T sample_block_scan(T v, T* scratch, T& total) {
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    T inclusive = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        T other = __shfl_up_sync(0xffffffffu, inclusive, o);
        if (lane >= o) inclusive += other;
    }
    __syncthreads();
    if (lane == 31) scratch[warp] = inclusive;
    __syncthreads();
    T before = 0;
    total = 0;
    for (int w = 0; w < SAMPLE_THREADS / 32; w++) {
        if (w < warp) before += scratch[w];
        total += scratch[w];
    }
    return before + inclusive - v;
}

struct SampleShared {
    double weight[SAMPLE_BINS][SAMPLE_THREADS];  // each thread's own column: no atomics
    unsigned short count[SAMPLE_BINS][SAMPLE_THREADS];
    double binWeight[SAMPLE_BINS];
    long long binCount[SAMPLE_BINS];
    double scanD[SAMPLE_THREADS / 32];
    int scanI[SAMPLE_THREADS / 32];
    u32 scanU[SAMPLE_THREADS / 32];
    u32 prefix;
    int chosen;
    long long groupCount;
    long long countAbove;
    double weightAbove;
};

// The row's sums of this block's partials: the sum over the row's blocks in block order (every block the same)
__device__ __forceinline__ double sample_grid_sum(const double* partials) {
    double s = 0;
    for (int b = 0; b < gridDim.x; b++) s += __ldcg(partials + b);
    return s;
}

// Where the candidates, highest key first (equal keys by id), first reach `target` in count (byWeight false) or in
// weight: the key there, how many tokens of that key (lowest ids first) are inside, and the weight of every token of a
// higher key. found is false when they never do (a weight target beyond the total by rounding).
struct SampleCut {
    u32 key;
    int ties;
    bool found;
    double weightAbove;
};

__device__ SampleCut sample_select(const float* __restrict__ x, int n, float top, float invT, bool byWeight,
                                   double target, SampleShared& s, SampleGrid* g, int& phase) {
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int stride = gridDim.x * SAMPLE_THREADS;
    __syncthreads();  // whatever read s before
    if (tid == 0) {
        s.prefix = 0;
        s.countAbove = 0;
        s.weightAbove = 0;
    }
    for (int level = 0; level < 8; level++) {
        const int shift = 28 - 4 * level;
        __syncthreads();  // the last level's choice is made; s.prefix is set
        const u32 prefix = s.prefix;
#pragma unroll
        for (int b = 0; b < SAMPLE_BINS; b++) {
            s.weight[b][tid] = 0;
            s.count[b][tid] = 0;
        }
        for (int i = blockIdx.x * SAMPLE_THREADS + tid; i < n; i += stride) {
            float v = x[i];
            if (!sample_candidate(v)) continue;
            u32 k = sample_key(v);
            if (level > 0 && (k >> (shift + 4)) != (prefix >> (shift + 4))) continue;
            int b = (k >> shift) & (SAMPLE_BINS - 1);
            s.count[b][tid]++;
            s.weight[b][tid] += (double) sample_weight(v, top, invT);
        }
        __syncthreads();
        const int slot = phase & 1;
        for (int b = 2 * warp; b < 2 * warp + 2; b++) {  // 8 warps, two bins each: this block's bins to the grid
            int c = 0;
            double w = 0;
            for (int j = lane; j < SAMPLE_THREADS; j += 32) {
                c += s.count[b][j];
                w += s.weight[b][j];
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
            w = warp_sum_dbl(w);
            if (lane == 0) {
                __stcg(&g->binCount[slot][blockIdx.x][b], c);
                __stcg(&g->binWeight[slot][blockIdx.x][b], w);
            }
        }
        sample_grid_sync(g);
        phase++;
        if (tid < SAMPLE_BINS) {  // the row's bins, summed in block order
            long long c = 0;
            double w = 0;
            for (int b = 0; b < gridDim.x; b++) {
                c += __ldcg(&g->binCount[slot][b][tid]);
                w += __ldcg(&g->binWeight[slot][b][tid]);
            }
            s.binCount[tid] = c;
            s.binWeight[tid] = w;
        }
        __syncthreads();
        if (tid == 0) {
            int chosen = -1;
            for (int b = SAMPLE_BINS - 1; b >= 0; b--) {
                if (s.binCount[b] == 0) continue;
                bool reaches = byWeight ? s.weightAbove + s.binWeight[b] >= target
                                        : (double) (s.countAbove + s.binCount[b]) >= target;
                if (reaches) {
                    chosen = b;
                    break;
                }
                s.weightAbove += s.binWeight[b];
                s.countAbove += s.binCount[b];
            }
            s.chosen = chosen;
            if (chosen >= 0) {
                s.prefix |= (u32) chosen << shift;
                s.groupCount = s.binCount[chosen];
            }
        }
        __syncthreads();
        if (s.chosen < 0) {
            SampleCut none = {0u, 0, false, 0.0};
            return none;
        }
    }
    SampleCut cut;
    cut.key = s.prefix;
    cut.found = true;
    cut.weightAbove = s.weightAbove;
    long long group = s.groupCount;
    if (byWeight) {
        // the fewest of the group's (equal) weights that reach the target after everything above
        double w = (double) sample_weight(sample_value(cut.key), top, invT);
        double need = w > 0 ? ceil((target - cut.weightAbove) / w) : (double) group;
        long long j = (long long) fmin(fmax(need, 1.0), (double) group);
        while (j > 1 && cut.weightAbove + (j - 1) * w >= target) j--;  // the quotient's rounding, either way
        while (j < group && cut.weightAbove + j * w < target) j++;
        cut.ties = (int) j;
    } else {
        cut.ties = (int) (target - (double) s.countAbove);
    }
    return cut;
}

extern "C" __global__ void __launch_bounds__(SAMPLE_THREADS)
model_sample_rows(const float* __restrict__ rows, int n, const SampleRule* __restrict__ rules, int* __restrict__ out,
                  SampleGrid* __restrict__ grids) {
    __shared__ SampleShared s;
    const float* x = rows + (long long) blockIdx.y * n;
    const SampleRule rule = rules[blockIdx.y];
    SampleGrid* g = grids + blockIdx.y;
    const int tid = threadIdx.x, blocks = gridDim.x;
    const int first = blockIdx.x * SAMPLE_THREADS + tid, stride = blocks * SAMPLE_THREADS;
    if (!(rule.temperature > 0.0)) {  // every block of the row leaves here: no barrier is entered
        if (blockIdx.x == 0 && tid == 0) out[blockIdx.y] = -1;
        return;
    }
    // each exchange through the grid's partials takes the next phase (slot phase & 1); this first one slot 0
    int phase = 0;
    // the highest candidate, and how many there are
    u32 best = 0;
    int candidates = 0;
    for (int i = first; i < n; i += stride) {
        float v = x[i];
        if (sample_candidate(v)) {
            u32 k = sample_key(v);
            best = k > best ? k : best;
            candidates++;
        }
    }
    best = sample_block_max(best, s.scanU);
    int blockCandidates;
    sample_block_scan(candidates, s.scanI, blockCandidates);
    if (tid == 0) {
        __stcg(&g->blockU[0][blockIdx.x], best);
        __stcg(&g->blockI[0][blockIdx.x], blockCandidates);
    }
    sample_grid_sync(g);
    phase++;
    best = 0;
    candidates = 0;
    for (int b = 0; b < blocks; b++) {
        u32 u = __ldcg(&g->blockU[0][b]);
        best = u > best ? u : best;
        candidates += __ldcg(&g->blockI[0][b]);
    }
    if (candidates == 0) {
        if (blockIdx.x == 0 && tid == 0) out[blockIdx.y] = -1;
        return;
    }
    const float top = sample_value(best);
    const float invT = (float) (1.0 / rule.temperature);
    // the kept prefix: keys above cutKey, and the first cutTies (by id) of key cutKey; cutKey 0 keeps every candidate
    u32 cutKey = 0;
    int cutTies = 0x7fffffff;
    if (rule.topK > 0 && rule.topK < candidates) {
        SampleCut c = sample_select(x, n, top, invT, false, (double) rule.topK, s, g, phase);
        cutKey = c.key;
        cutTies = c.ties;
        if (rule.topP < 1.0) {
            double kept = c.weightAbove + c.ties * (double) sample_weight(sample_value(c.key), top, invT);
            SampleCut p = sample_select(x, n, top, invT, true, rule.topP * kept, s, g, phase);
            if (p.found && (p.key > cutKey || (p.key == cutKey && p.ties < cutTies))) {
                cutKey = p.key;
                cutTies = p.ties;
            }
        }
    } else if (rule.topP < 1.0) {
        double w = 0;
        for (int i = first; i < n; i += stride) {
            float v = x[i];
            if (sample_candidate(v)) w += (double) sample_weight(v, top, invT);
        }
        double blockWeight;
        sample_block_scan(w, s.scanD, blockWeight);
        const int slot = phase & 1;
        if (tid == 0) __stcg(&g->blockD[slot][blockIdx.x], blockWeight);
        sample_grid_sync(g);
        phase++;
        double kept = sample_grid_sum(g->blockD[slot]);
        SampleCut p = sample_select(x, n, top, invT, true, rule.topP * kept, s, g, phase);
        if (p.found) {
            cutKey = p.key;
            cutTies = p.ties;
        }
    }
    // the draw, in id order: each thread of the row a contiguous chunk of ids, blocks in order
    const int chunk = (n + stride - 1) / stride;
    const int lo = min(n, first * chunk), hi = min(n, lo + chunk);
    const float floor = (float) rule.minP;
    int ties = 0;
    double w = 0;
    for (int i = lo; i < hi; i++) {
        u32 k;
        float wi = sample_kept(x[i], cutKey, top, invT, floor, k);
        if (wi < 0.f) continue;
        if (k == cutKey) {
            ties++;
        } else {
            w += (double) wi;
        }
    }
    int blockTies;
    int tieBase = sample_block_scan(ties, s.scanI, blockTies);
    int slot = phase & 1;
    if (tid == 0) __stcg(&g->blockI[slot][blockIdx.x], blockTies);
    sample_grid_sync(g);
    phase++;
    for (int b = 0; b < blockIdx.x; b++) tieBase += __ldcg(&g->blockI[slot][b]);
    const int keptTies = max(0, min(ties, cutTies - tieBase));
    if (keptTies > 0) w += keptTies * (double) sample_weight(sample_value(cutKey), top, invT);
    double blockWeight;
    double base = sample_block_scan(w, s.scanD, blockWeight);
    slot = phase & 1;
    if (tid == 0) __stcg(&g->blockD[slot][blockIdx.x], blockWeight);
    sample_grid_sync(g);
    phase++;
    // the blocks' bases in block order, the total, and the owner block: the last with weight whose base is at or
    // before the target (its first thread with weight starts exactly there, so it holds the owner thread)
    double total = sample_grid_sum(g->blockD[slot]);
    const double target = rule.uniform * total;
    double running = 0, myBase = 0;
    int ownerBlock = -1;
    for (int b = 0; b < blocks; b++) {
        double bw = __ldcg(&g->blockD[slot][b]);
        if (b == blockIdx.x) myBase = running;
        if (bw > 0 && running <= target) ownerBlock = b;
        running += bw;
    }
    if (blockIdx.x != ownerBlock) return;
    base += myBase;
    // the owner thread: the last with weight whose chunk starts at or before the target
    int owner = sample_block_max(w > 0 && base <= target ? tid : -1, s.scanI);
    if (tid == owner) {
        double r = target - base;
        int pick = -1, tie = tieBase;
        for (int i = lo; i < hi; i++) {
            u32 k;
            float wi = sample_kept(x[i], cutKey, top, invT, floor, k);
            if (wi < 0.f || (k == cutKey && tie++ >= cutTies)) continue;
            pick = i;
            r -= (double) wi;
            if (r < 0) break;
        }
        out[blockIdx.y] = pick;
    }
}
