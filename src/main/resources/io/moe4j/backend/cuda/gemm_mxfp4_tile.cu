// MXFP4 grouped expert GEMM for prefill, on tensor cores (mma.sync m16n8k16, f16 inputs, f32 accumulation).
//
// Why a second MXFP4 kernel: the GEMV (gemv_mxfp4_mma.cu) streams an expert's weights once per routed pair, so
// with hundreds of tokens per expert it reads the weights hundreds of times. Here a block computes a tile of
// weight rows for up to TILE_BN pairs of one expert, so each weight is read and decoded once per TILE_BN pairs.
//
// It reads the GEMV's fragment-order layout (no second copy of the weights): a warp's 16 bytes per lane of one
// (16-row tile, 64-element block pair) are exactly its A fragments for four k16 steps, decoded in registers by
// decode_word, so weights never pass through shared memory. Each warp owns TILE_TPW row tiles, so the B fragment
// it loads from shared memory feeds TILE_TPW MMAs. The per-(row, 32-block) E8M0 scale is applied to each block's
// partial product (two MMAs) as the GEMV does, which keeps every power of two exact.
//
// x (B, the pairs' input rows) is f16, each row scaled by 2^e so its largest magnitude sits in [2^14, 2^15)
// (moe_rows.cu writes it so, with e per row): with the weights' 2^-14 the epilogue multiplies by 2^(14 - e).
// Rows are BP * 64 halves, zero past K. x tiles go through a TILE_STAGES-deep cp.async ring in shared memory;
// weights for the next block pair are loaded into registers while the current one is multiplied.
//
// TILE_PRESCALE (the default for stacks without E8M0 0 or 255): rather than scaling each block's partial product
// (4 FFMA per MMA pair, more issue slots than the MMAs themselves), the decoded weights are multiplied in f16 by
// 2^(s - R) (R: the largest scale exponent of the row, from rowExp) and the MMAs accumulate the whole row; the
// epilogue multiplies by 2^(R - 127). Exact while a block's scale is within 2^23 of its row's largest (f16
// subnormals hold e2m1 * 2^(s - R) exactly down to 2^-24); smaller blocks, under 2^-23 of the row's largest
// weight, are flushed to zero. The prefill path is f16-rounded on the input side anyway (see above).
//
// Grid: x over groups of TILE_WARPS * TILE_TPW row tiles, fastest, y over M tiles (expert, first pair, count <=
// TILE_BN; a count of 0 is an empty tile, which a plan built on the device pads its grid with), which the plan
// sorts by expert. Blocks running together then share one M tile's x rows (read from DRAM once, then from L2 by
// every row group) and one expert's weights (its M tiles are neighbours). The other order, M tiles fastest, had
// every wave read all M tiles' x rows (~100 MB at T = 4096, twice the L2) once per row group: DRAM-bound at 80% of
// its bandwidth (ncu). Output: float32 out[first + pair][row], rows of N.
#include "mxfp4_mma.cuh"

#ifndef TILE_WARPS
#define TILE_WARPS 8
#endif
#ifndef TILE_TPW
#define TILE_TPW 2
#endif
#ifndef TILE_BN
#define TILE_BN 64
#endif
#ifndef TILE_STAGES
#define TILE_STAGES 3
#endif
#ifndef TILE_PRESCALE
#define TILE_PRESCALE 1
#endif
#define TILE_NB (TILE_BN / 8)
// 64 halves of a block pair plus 8 of padding: rows 144 bytes apart put the 8 rows of an ldmatrix phase on
// distinct bank quads.
#define XPITCH 72

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

extern "C" __global__ void __launch_bounds__(TILE_WARPS * 32)
moe_gemm_mxfp4_tile(const uint4* __restrict__ codes, const u32* __restrict__ scales, const u16* __restrict__ xh,
                    const int* __restrict__ xexp, const int4* __restrict__ mtiles, float* __restrict__ out, int N,
                    int NT, int BP, const u8* __restrict__ rowExp) {
    __shared__ __align__(16) u16 xs[TILE_STAGES][TILE_BN][XPITCH];
    enter_after_prior_grid();
    const int4 mt = mtiles[blockIdx.y];
    const int e = mt.x;
    const int first = mt.y;
    const int count = mt.z;
    if (count == 0) return; // an empty tile a device-built plan pads its grid with
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int g = lane >> 2;
    const int t = lane & 3;
    const int rt0 = (blockIdx.x * TILE_WARPS + warp) * TILE_TPW;
    const size_t xPitch = (size_t)BP * 64;

    const uint4* wp[TILE_TPW];
    const u32* sp[TILE_TPW];
#pragma unroll
    for (int i = 0; i < TILE_TPW; ++i) {
        const size_t base = ((size_t)e * NT + min(rt0 + i, NT - 1)) * BP;
        wp[i] = codes + base * 32 + lane;
        sp[i] = scales + base * 8 + g;
    }

#if TILE_PRESCALE
    // The reference exponent R of rows g and g+8 of each tile (rowExp is [E][NT * 16], padded rows 127).
    int rlo[TILE_TPW], rhi[TILE_TPW];
#pragma unroll
    for (int i = 0; i < TILE_TPW; ++i) {
        const size_t r0 = ((size_t)e * NT + min(rt0 + i, NT - 1)) * 16;
        rlo[i] = rowExp[r0 + g];
        rhi[i] = rowExp[r0 + g + 8];
    }
#endif

    // One block pair of x for the tile's pairs: TILE_BN rows of 8 chunks of 16 bytes; rows past count are
    // zero-filled (cp.async with a source size of 0).
    const u32 xsBase = smem_address(&xs[0][0][0]);
    auto load_x = [&](int bp, int stage) {
        for (int c = tid; c < TILE_BN * 8; c += TILE_WARPS * 32) {
            const int row = c >> 3;
            const int chunk = c & 7;
            const u16* src = xh + (size_t)(first + min(row, count - 1)) * xPitch + bp * 64 + chunk * 8;
            const u32 dst = xsBase + (u32)(((stage * TILE_BN + row) * XPITCH + chunk * 8) * 2);
            const int bytes = row < count ? 16 : 0;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
        }
    };
    load_x(0, 0);
    commit_stage();
    if (BP > 1) load_x(1, 1);
    commit_stage();

    uint4 qn[TILE_TPW];
    u32 sn[TILE_TPW];
#pragma unroll
    for (int i = 0; i < TILE_TPW; ++i) {
        qn[i] = __ldg(wp[i]);
        sn[i] = __ldg(sp[i]);
    }
    float acc[TILE_TPW][TILE_NB][4];
#pragma unroll
    for (int i = 0; i < TILE_TPW; ++i)
#pragma unroll
        for (int n = 0; n < TILE_NB; ++n)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][n][r] = 0.0f;

    for (int bp = 0; bp < BP; ++bp) {
        // Stage bp has landed (only the newest group may be pending), and every warp is done with the stage
        // that the next load overwrites (read in iteration bp - 1).
        wait_stages<1>();
        __syncthreads();
        if (bp + 2 < BP) load_x(bp + 2, (bp + 2) % TILE_STAGES);
        commit_stage();

        u32 a[TILE_TPW][4][4];
#if !TILE_PRESCALE
        float s[TILE_TPW][4];
#endif
#pragma unroll
        for (int i = 0; i < TILE_TPW; ++i) {
#if TILE_PRESCALE
            decode_prescaled(qn[i], sn[i], rlo[i], rhi[i], a[i]);
#else
            decode_word(qn[i].x, a[i][0]); // row g,   block 2bp
            decode_word(qn[i].y, a[i][1]); // row g+8, block 2bp
            decode_word(qn[i].z, a[i][2]); // row g,   block 2bp+1
            decode_word(qn[i].w, a[i][3]); // row g+8, block 2bp+1
            s[i][0] = e8m0<0>(sn[i]);
            s[i][1] = e8m0<1>(sn[i]);
            s[i][2] = e8m0<2>(sn[i]);
            s[i][3] = e8m0<3>(sn[i]);
#endif
        }
        if (bp + 1 < BP) {
#pragma unroll
            for (int i = 0; i < TILE_TPW; ++i) {
                qn[i] = __ldg(wp[i] + (size_t)(bp + 1) * 32);
                sn[i] = __ldg(sp[i] + (size_t)(bp + 1) * 8);
            }
        }

        const u32 stageBase = xsBase + (u32)(bp % TILE_STAGES) * (TILE_BN * XPITCH * 2);
#pragma unroll
        for (int n = 0; n < TILE_NB; ++n) {
            // Matrices 0-3: the 8 pairs of this n tile at k 0-7, 8-15, 16-23, 24-31 (then 32-63): B fragments of
            // the block pair's four k16 steps.
            const u32 rowAddr = stageBase + (u32)(((n * 8 + (lane & 7)) * XPITCH + (lane >> 3) * 8) * 2);
            u32 b0[4], b1[4];
            ldmatrix_x4(b0, rowAddr);
            ldmatrix_x4(b1, rowAddr + 64);
#pragma unroll
            for (int i = 0; i < TILE_TPW; ++i) {
#if TILE_PRESCALE
                float (&d)[4] = acc[i][n];
                mma16816(d, a[i][0][0], a[i][1][0], a[i][0][1], a[i][1][1], make_uint2(b0[0], b0[1]), d[0], d[1],
                         d[2], d[3]);
                mma16816(d, a[i][0][2], a[i][1][2], a[i][0][3], a[i][1][3], make_uint2(b0[2], b0[3]), d[0], d[1],
                         d[2], d[3]);
                mma16816(d, a[i][2][0], a[i][3][0], a[i][2][1], a[i][3][1], make_uint2(b1[0], b1[1]), d[0], d[1],
                         d[2], d[3]);
                mma16816(d, a[i][2][2], a[i][3][2], a[i][2][3], a[i][3][3], make_uint2(b1[2], b1[3]), d[0], d[1],
                         d[2], d[3]);
#else
                float c[4];
                mma16816(c, a[i][0][0], a[i][1][0], a[i][0][1], a[i][1][1], make_uint2(b0[0], b0[1]), 0.0f, 0.0f,
                         0.0f, 0.0f);
                mma16816(c, a[i][0][2], a[i][1][2], a[i][0][3], a[i][1][3], make_uint2(b0[2], b0[3]), c[0], c[1],
                         c[2], c[3]);
                acc[i][n][0] = fmaf(c[0], s[i][0], acc[i][n][0]);
                acc[i][n][1] = fmaf(c[1], s[i][0], acc[i][n][1]);
                acc[i][n][2] = fmaf(c[2], s[i][1], acc[i][n][2]);
                acc[i][n][3] = fmaf(c[3], s[i][1], acc[i][n][3]);
                mma16816(c, a[i][2][0], a[i][3][0], a[i][2][1], a[i][3][1], make_uint2(b1[0], b1[1]), 0.0f, 0.0f,
                         0.0f, 0.0f);
                mma16816(c, a[i][2][2], a[i][3][2], a[i][2][3], a[i][3][3], make_uint2(b1[2], b1[3]), c[0], c[1],
                         c[2], c[3]);
                acc[i][n][0] = fmaf(c[0], s[i][2], acc[i][n][0]);
                acc[i][n][1] = fmaf(c[1], s[i][2], acc[i][n][1]);
                acc[i][n][2] = fmaf(c[2], s[i][3], acc[i][n][2]);
                acc[i][n][3] = fmaf(c[3], s[i][3], acc[i][n][3]);
#endif
            }
        }
    }
    wait_stages<0>();

    // C fragment: c0, c1 = (row g, pairs 2t, 2t+1), c2, c3 = (row g+8, same pairs).
#pragma unroll
    for (int n = 0; n < TILE_NB; ++n) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int pair = n * 8 + 2 * t + half;
            if (pair >= count) continue;
            const float unscale = pow2(-xexp[first + pair]);
            float* o = out + (size_t)(first + pair) * N;
#pragma unroll
            for (int i = 0; i < TILE_TPW; ++i) {
                const int rt = rt0 + i;
                if (rt >= NT) continue;
                const int row = rt * 16 + g;
#if TILE_PRESCALE
                // acc holds sum (e2m1 * 2^(s - R)) * x * 2^e: times 2^(R - 127) and 2^-e (two exact factors).
                const float lo = acc[i][n][half] * ldexpf(1.0f, rlo[i] - 127) * unscale;
                const float hi = acc[i][n][2 + half] * ldexpf(1.0f, rhi[i] - 127) * unscale;
#else
                const float lo = acc[i][n][half] * pow2(14) * unscale;
                const float hi = acc[i][n][2 + half] * pow2(14) * unscale;
#endif
                if (row < N) o[row] = lo;
                if (row + 8 < N) o[row + 8] = hi;
            }
        }
    }
}
