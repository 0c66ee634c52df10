// moe4j: DeepSeek's multi-head latent attention for a prompt's rows in tiles (io.moe4j.backend.cuda.ModelOps
// #attendLatentTiles), the prompt's counterpart of model_attend_latent_rows (model_ops.cu), whose block of one row
// and one head reads that head's kv_b_proj rows (W_UK and W_UV) and every cached latent the row sees, for each row.
// Here a block takes LT_ROWS rows of one sequence and one head h, and
//   1. takes their q_nope into the latent: q_lat = q_nope . W_UK[h] (W_UK[h] read once for the tile's rows);
//   2. walks the cached positions any of its rows sees, LT_KEYS at a time into shared memory (cp.async), with an
//      online softmax per row of (q_rope . rope key + q_lat . latent) * scale, the weighted latents summed;
//   3. writes out[row][h] = W_UV[h] . the attended latent (W_UV[h] read once for the tile's rows).
// So the cached latents (rope + lora floats a position) are read once for LT_ROWS rows of a head instead of once a
// row. Thread (ty, tx) of the 256 takes row ty, the scores of keys tx, tx + 8, tx + 16, tx + 24 of a tile and the
// latent columns 4tx + 32c..+3; shared rows are padded by 4 floats (the 8 threads of a 16-byte load phase meet
// different banks). Causal only (DeepSeek's attention has no window); each row is masked by its own position.
// The sums run in the same orders as model_attend_latent_rows where it matters to a row's own numbers (q_lat over
// nope, the output over lora). lora a multiple of 32 up to LT_LORA_MAX, rope a multiple of 4 up to LT_ROPE_MAX,
// nope up to LT_NOPE_MAX. grid: (ceil(tokens / LT_ROWS), heads); block: 256; dynamic shared memory:
// 4 * (LT_ROWS * P + LT_KEYS * max(P, nope) + LT_KEYS * (LT_ROWS + 4)) bytes with P = rope + lora + 4
#include "attention.cuh"

#define LT_ROWS 32
#define LT_KEYS 32
#define LT_LORA_MAX 512
#define LT_ROPE_MAX 64
#define LT_NOPE_MAX 256

extern "C" __global__ void __launch_bounds__(256, 1)
model_attend_latent_tiles(const float* __restrict__ q, const float* __restrict__ w,
                          const unsigned long long* __restrict__ caches, float* __restrict__ out,
                          const long long* __restrict__ positions, int tokens, int heads, int nope, int rope,
                          int vDim, int lora, float scale) {
    extern __shared__ __align__(16) float smem[];
    __shared__ long long sTop[8];
    const int width = rope + lora;  // a cache row: [rope key | latent]
    const int pitch = width + 4;
    const int pPitch = LT_ROWS + 4;
    float* sQ = smem;                                                // [LT_ROWS][pitch]: [q_rope | q_lat]
    float* sK = sQ + LT_ROWS * pitch;                                // [LT_KEYS][pitch]; q_nope first, O last
    float* sP = sK + LT_KEYS * (pitch > nope ? pitch : nope);        // [LT_KEYS][pPitch]: the tile's weights
    const int t0 = (gridDim.x - 1 - blockIdx.x) * LT_ROWS;          // the last rows (the longest spans) first
    const int rows = tokens - t0 < LT_ROWS ? tokens - t0 : LT_ROWS;
    const int h = blockIdx.y;
    const int tid = threadIdx.x, ty = tid >> 3, tx = tid & 7, warp = tid >> 5, lane = tid & 31;
    const float* cache = row_cache(caches, 0, 0);
    // row ty's position (-1: past the pass's rows, sees nothing), and the block's last (tables: before the wait)
    const long long rowPos = ty < rows ? load_l2(positions + t0 + ty) : -1;
    const long long warpTop = warp_max_ll(rowPos);
    if (lane == 0) sTop[warp] = warpTop;
    const float* wk = w + (long long) h * (nope + vDim) * lora;  // W_UK[h]: nope rows of lora
    const float* wv = wk + (long long) nope * lora;              // W_UV[h]: vDim rows of lora
    enter_after_prior_grid();

    // 1. the rows' q_nope (in sK's space, rows of nope) and q_rope; then q_lat = q_nope . W_UK[h], columns tid and
    //    tid + 256 for all rows (W_UK's rows read once, coalesced), summed over nope in order
    const int qWidth = nope + rope;
    for (int i = tid; i < LT_ROWS * qWidth; i += blockDim.x) {
        int r = i / qWidth, d = i - r * qWidth;
        float v = r < rows ? q[((long long) (t0 + r) * heads + h) * qWidth + d] : 0.f;
        if (d < nope) {
            sK[r * nope + d] = v;
        } else {
            sQ[r * pitch + (d - nope)] = v;
        }
    }
    __syncthreads();
    long long hi = sTop[0];
#pragma unroll
    for (int i = 1; i < 8; i++) hi = sTop[i] > hi ? sTop[i] : hi;
    hi += 1;  // exclusive
    {
        const int c0 = tid, c1 = tid + 256;
        float a0[LT_ROWS], a1[LT_ROWS];
#pragma unroll
        for (int r = 0; r < LT_ROWS; r++) a0[r] = a1[r] = 0.f;
        for (int i = 0; i < nope; i++) {
            const float w0 = c0 < lora ? wk[(long long) i * lora + c0] : 0.f;
            const float w1 = c1 < lora ? wk[(long long) i * lora + c1] : 0.f;
#pragma unroll
            for (int r = 0; r < LT_ROWS; r++) {
                const float x = sK[r * nope + i];
                a0[r] = fmaf(x, w0, a0[r]);
                a1[r] = fmaf(x, w1, a1[r]);
            }
        }
#pragma unroll
        for (int r = 0; r < LT_ROWS; r++) {
            if (c0 < lora) sQ[r * pitch + rope + c0] = a0[r];
            if (c1 < lora) sQ[r * pitch + rope + c1] = a1[r];
        }
    }
    __syncthreads();  // q_nope's space is the keys' from here

    // 2. the online softmax over the cached positions, a tile at a time
    const int quads = width >> 2;
    const int cols = lora >> 5;  // float4 columns of the latent a thread holds
    float4 o[LT_LORA_MAX / 32];
#pragma unroll
    for (int c = 0; c < LT_LORA_MAX / 32; c++) o[c] = make_float4(0.f, 0.f, 0.f, 0.f);
    float m = NEG_INF_F, l = 0.f;
    const float* qRow = sQ + ty * pitch;
    for (long long base = 0; base < hi; base += LT_KEYS) {
        const int n = (int) (hi - base < LT_KEYS ? hi - base : LT_KEYS);
        // rows past the span are zeroed: a weight of 0 times stale memory could be NaN
        for (int i = tid; i < LT_KEYS * quads; i += blockDim.x) {
            int j = i / quads, c = (i - j * quads) << 2;
            if (j < n) {
                cp_async16(sK + j * pitch + c, cache + (base + j) * (long long) width + c);
            } else {
                *(float4*) (sK + j * pitch + c) = make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads();
        float s[4] = {0.f, 0.f, 0.f, 0.f};
        for (int d = 0; d < width; d += 4) {
            const float4 a = *(const float4*) (qRow + d);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float4 b = *(const float4*) (sK + (tx + 8 * i) * pitch + d);
                s[i] = fmaf(a.x, b.x, s[i]);
                s[i] = fmaf(a.y, b.y, s[i]);
                s[i] = fmaf(a.z, b.z, s[i]);
                s[i] = fmaf(a.w, b.w, s[i]);
            }
        }
        float top = NEG_INF_F;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const long long key = base + tx + 8 * i;
            s[i] = key <= rowPos ? s[i] * scale : NEG_INF_F;
            top = fmaxf(top, s[i]);
        }
        top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 1));
        top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 2));
        top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 4));
        const float mNew = fmaxf(m, top);
        const float correction = mNew == NEG_INF_F ? 1.f : __expf(m - mNew);
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float p = s[i] == NEG_INF_F ? 0.f : __expf(s[i] - mNew);
            sP[(tx + 8 * i) * pPitch + ty] = p;
            sum += p;
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        sum += __shfl_xor_sync(0xffffffffu, sum, 4);
        l = l * correction + sum;
        m = mNew;
#pragma unroll
        for (int c = 0; c < LT_LORA_MAX / 32; c++) {
            o[c].x *= correction;
            o[c].y *= correction;
            o[c].z *= correction;
            o[c].w *= correction;
        }
        __syncthreads();
        for (int k = 0; k < n; k++) {
            const float p = sP[k * pPitch + ty];
            const float* lat = sK + k * pitch + rope + 4 * tx;
#pragma unroll
            for (int c = 0; c < LT_LORA_MAX / 32; c++) {
                if (c < cols) {
                    const float4 v = *(const float4*) (lat + 32 * c);
                    o[c].x = fmaf(p, v.x, o[c].x);
                    o[c].y = fmaf(p, v.y, o[c].y);
                    o[c].z = fmaf(p, v.z, o[c].z);
                    o[c].w = fmaf(p, v.w, o[c].w);
                }
            }
        }
        __syncthreads();  // before the next tile overwrites the keys and the weights
    }

    // 3. the attended latents (rows of sK's space), then out = W_UV[h] . latent, a warp an output dimension, lanes
    //    over the latent as model_attend_latent_rows sums it
#pragma unroll
    for (int c = 0; c < LT_LORA_MAX / 32; c++) {
        if (c < cols && ty < rows) {
            *(float4*) (sK + ty * pitch + 4 * tx + 32 * c) =
                    make_float4(o[c].x / l, o[c].y / l, o[c].z / l, o[c].w / l);
        }
    }
    __syncthreads();
    for (int v = warp; v < vDim; v += 8) {
        const float* wr = wv + (long long) v * lora;
        float wl[LT_LORA_MAX / 32];
#pragma unroll
        for (int i = 0; i < LT_LORA_MAX / 32; i++) {
            const int c = lane + 32 * i;
            wl[i] = c < lora ? wr[c] : 0.f;
        }
        for (int r = 0; r < rows; r++) {
            float a = 0.f;
#pragma unroll
            for (int i = 0; i < LT_LORA_MAX / 32; i++) {
                const int c = lane + 32 * i;
                if (c < lora) a = fmaf(wl[i], sK[r * pitch + c], a);
            }
            a = warp_sum_f(a);
            if (lane == 0) out[((long long) (t0 + r) * heads + h) * vDim + v] = a;
        }
    }
}
