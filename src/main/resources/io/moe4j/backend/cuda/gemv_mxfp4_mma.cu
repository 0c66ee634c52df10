// MXFP4 grouped GEMV on tensor cores (mma.sync m16n8k16, f16 inputs, f32 accumulation), decode path.
//
// Why tensor cores for a GEMV: decoding 4-bit codes costs integer instructions per element, and on CUDA cores
// each element then also needs a conversion and an FFMA; that instruction count, not memory, bounded the SIMT
// kernel (gemv_mxfp4.cu). Here the conversions and multiply-adds go to the tensor cores and the CUDA cores only
// decode. x (float32) enters as two fp16 parts hi + lo (B columns 0 and 2; the others are zero, so each lane's
// result sits in one accumulator register per row), after scaling the row by a power of two so that its largest
// element is near 2^14: the parts carry 22 bits of x, and the products are summed in float32.
//
// Weight layout, made by moe_repack_mxfp4_mma from the checkpoint's (see the repack kernel below):
//   codes  [E][NT = ceil(N/16) row tiles][BP = ceil(K/64) block pairs][32 lanes] uint4
//   scales [E][NT][BP][8] u32
// Lane l = 4g + t of a warp owns rows g and g+8 of the tile. Its uint4 word j holds row g + 8(j & 1) of MX block
// 2bp + (j >> 1): the eight E2M1 codes at k = 32 block + {2t, 2t+1 | 2t+8, 2t+9 | 16+2t, 17+2t | 24+2t, 25+2t},
// i.e. the f16x2 A-fragment pairs H0..H3 of the block's two m16n8k16 steps. Within each 16-bit half of a word
// (low half: first element of each pair, high half: second) the bits are
//   0-2 magnitude H3, 3-5 magnitude H2, 6-8 magnitude H1, 9-11 magnitude H0, 12 sign H1, 13 sign H3,
//   14 sign H2, 15 sign H0
// chosen so that the four fp16 pairs come out of 11 shift/mask instructions (see decode_word). A pair's bits land
// on fp16 bits 9-11 (magnitude) and 15 (sign): exactly e2m1 * 2^-14, code 1 being the fp16 subnormal 2^-15.
// Scale word g holds the E8M0 bytes of (row g, block 2bp), (row g+8, block 2bp), (row g, 2bp+1), (row g+8, 2bp+1).
#include "mxfp4_mma.cuh"

// Warps splitting one row tile's K range (block pairs ks, ks + KSPLIT, ...), and row tiles per block.
#ifndef MOE4J_KSPLIT
#define MOE4J_KSPLIT 4
#endif
#ifndef MOE4J_TILES
#define MOE4J_TILES 2
#endif
// Stages of each warp's cp.async ring: block pairs of weights (512 bytes of codes, 32 of scales per warp) in
// flight. They wait in shared memory rather than registers, so depth costs no occupancy.
#ifndef MOE4J_DEPTH
#define MOE4J_DEPTH 8
#endif
#define MMA_WARPS (MOE4J_KSPLIT * MOE4J_TILES)

// v = hi + lo in fp16, lo rounding the remainder: 22 significant bits of v.
__device__ __forceinline__ void split2(float v, u16& hi, u16& lo) {
    hi = f32_to_f16(v);
    lo = f32_to_f16(v - f16_to_f32(hi));
}

// B-fragment words per k16 step in shared memory: column 0 (hi) for t = 0..3, then column 2 (lo), as uint2 (k 2t,
// 2t+1 | k 2t+8, 2t+9). Lanes whose column is zero read a zero area instead, with stride 0.
#define XB_STEP 8

extern "C" __global__ void __launch_bounds__(MMA_WARPS * 32)
moe_gemv_mxfp4_mma(const uint4* __restrict__ codes, const u32* __restrict__ scales, const float* __restrict__ x,
                   const int2* __restrict__ routes, float* __restrict__ out, int N, int K, int NT, int BP,
                   int routesReady) {
    constexpr int S = MOE4J_DEPTH;
    // Dynamic shared memory: x as B fragments [BP * 4 k-steps][2 parts][4 t] then a zero area of 4 steps; after
    // it, each warp's ring: S code slots of 512 bytes (32 lanes x 16), then S scale slots of 128 (32 lanes x 4).
    extern __shared__ uint2 xb[];
    __shared__ float partial[MMA_WARPS][16];
    __shared__ float warpMax[MMA_WARPS];

    // Overlapped launch (moe4j_common.cuh): the weights never change, so the ring's first stages may go out before
    // the prior kernel ends, once the route is known; routesReady says the routes were written at least two kernels
    // earlier (the second GEMM's), else they are read after the wait. Either way through L2 (see load_l2).
    if (!routesReady) wait_prior_grid();
    const int2 route = load_l2(routes + blockIdx.y);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int g = lane >> 2;
    const int t = lane & 3;
    const int tile = blockIdx.x * MOE4J_TILES + warp / MOE4J_KSPLIT;
    const int ks = warp % MOE4J_KSPLIT;
    const bool active = tile < NT; // inactive warps still take part in the block's barriers
    const size_t tileBase = ((size_t)route.x * NT + min(tile, NT - 1)) * BP;
    // This warp's block pairs are ks, ks + KSPLIT, ...: iterations of the main loop.
    const int iterations = active && ks < BP ? (BP - ks + MOE4J_KSPLIT - 1) / MOE4J_KSPLIT : 0;

    // The ring's first S - 1 stages go out before x is prepared, so their latency overlaps the preparation.
    // Every stage commits a group, empty or not, so that "group i is complete" is always wait_group(S - 2).
    char* ring = reinterpret_cast<char*>(xb + BP * 4 * XB_STEP + 4 * XB_STEP) + warp * S * 640;
    const u32 codeRing = smem_address(ring) + 16 * lane;
    const u32 scaleRing = smem_address(ring + S * 512) + 4 * lane;
    const uint4* codeNext = codes + (tileBase + ks) * 32 + lane;
    const u32* scaleNext = scales + (tileBase + ks) * 8 + g;
#pragma unroll
    for (int d = 0; d < S - 1; ++d) {
        if (d < iterations) {
            issue_stage(codeRing + 512 * d, scaleRing + 128 * d, codeNext, scaleNext);
            codeNext += MOE4J_KSPLIT * 32;
            scaleNext += MOE4J_KSPLIT * 8;
        }
        commit_stage();
    }

    enter_after_prior_grid(); // x (and out) belong to the call's earlier kernels

    // x row -> power-of-two scale 2^e putting max|x| in [2^14, 2^15) -> two fp16 parts in B-fragment order.
    // Loads go out X_BATCH at a time before any is used: issue is in order, so a loop that uses each load right
    // away pays one L2 round trip per iteration, which made this preparation the largest cost of a decode call.
    // K is a multiple of 32 for MXFP4, so x rows are whole float4s.
    constexpr int X_BATCH = 3; // 3 x 256 threads cover K = 3072 in one batch; more would cost registers
    const float4* xv = reinterpret_cast<const float4*>(x + (size_t)route.y * K);
    const int nv = K >> 2;
    float m = 0.0f;
    for (int b = threadIdx.x; b < nv; b += X_BATCH * blockDim.x) {
        float4 v[X_BATCH];
#pragma unroll
        for (int u = 0; u < X_BATCH; ++u) {
            const int i = b + u * blockDim.x;
            v[u] = i < nv ? __ldg(xv + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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
    for (int w = 1; w < MMA_WARPS; ++w) m = fmaxf(m, warpMax[w]);
    const int biased = (int)((__float_as_uint(m) >> 23) & 0xFF);
    const int e = m == 0.0f ? 0 : max(-100, min(100, 141 - biased));
    const float up = __uint_as_float((u32)(127 + e) << 23);
    // Element k lands in k-step k/16 at B-fragment word (part, t = (k%8)/2), register (k%16)/8, half k%2.
    u16* xh = reinterpret_cast<u16*>(xb);
    for (int b = threadIdx.x; b < BP * 16; b += X_BATCH * blockDim.x) {
        float4 v[X_BATCH];
#pragma unroll
        for (int u = 0; u < X_BATCH; ++u) {
            const int i = b + u * blockDim.x;
            v[u] = i < nv ? __ldg(xv + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < X_BATCH; ++u) {
            const int i = b + u * blockDim.x;
            if (i < BP * 16) {
                const float vals[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int k = 4 * i + c;
                    const int step = k >> 4, r = k & 15;
                    const int idx = ((step * XB_STEP + ((r & 7) >> 1)) * 2 + (r >> 3)) * 2 + (r & 1);
                    u16 hi, lo;
                    split2(vals[c] * up, hi, lo);
                    xh[idx] = hi;
                    xh[idx + 16] = lo; // part 1 (lo) is 4 uint2 further
                }
            }
        }
    }
    for (int i = threadIdx.x; i < 4 * XB_STEP; i += blockDim.x) xb[BP * 4 * XB_STEP + i] = make_uint2(0u, 0u);
    __syncthreads();

    // Lane (g, t) supplies B column g: g = 0 the hi part, g = 2 the lo part, the rest zeros.
    const bool suppliesB = g == 0 || g == 2;
    const uint2* xq = suppliesB ? xb + ks * 4 * XB_STEP + (g >> 1) * 4 + t : xb + BP * 4 * XB_STEP;
    const int xStride = suppliesB ? MOE4J_KSPLIT * 4 * XB_STEP : 0;

    // Row g and g+8 results: C column 2t of each MMA (column 2t+1 is always zero), scaled per MX block.
    float accLo = 0.0f, accHi = 0.0f;
    for (int i = 0; i < iterations; ++i) {
        wait_stages<S - 2>(); // stage i has landed (this lane's own copies)
        const int slot = i % S;
        const uint4 q = *reinterpret_cast<const uint4*>(ring + 512 * slot + 16 * lane);
        const u32 cs = *reinterpret_cast<const u32*>(ring + S * 512 + 128 * slot + 4 * lane);
        // Refill the slot read in the previous iteration with stage i + S - 1.
        if (i + S - 1 < iterations) {
            const int refill = (i + S - 1) % S;
            issue_stage(codeRing + 512 * refill, scaleRing + 128 * refill, codeNext, scaleNext);
            codeNext += MOE4J_KSPLIT * 32;
            scaleNext += MOE4J_KSPLIT * 8;
        }
        commit_stage();
        u32 a0[4], b0[4], a1[4], b1[4];
        decode_word(q.x, a0); // row g,   MX block 2bp
        decode_word(q.y, b0); // row g+8, MX block 2bp
        decode_word(q.z, a1); // row g,   MX block 2bp+1
        decode_word(q.w, b1); // row g+8, MX block 2bp+1
        float c[4];
        mma16816(c, a0[0], b0[0], a0[1], b0[1], xq[0], 0.0f, 0.0f, 0.0f, 0.0f);
        mma16816(c, a0[2], b0[2], a0[3], b0[3], xq[XB_STEP], c[0], c[1], c[2], c[3]);
        accLo = fmaf(c[0], e8m0<0>(cs), accLo);
        accHi = fmaf(c[2], e8m0<1>(cs), accHi);
        mma16816(c, a1[0], b1[0], a1[1], b1[1], xq[2 * XB_STEP], 0.0f, 0.0f, 0.0f, 0.0f);
        mma16816(c, a1[2], b1[2], a1[3], b1[3], xq[3 * XB_STEP], c[0], c[1], c[2], c[3]);
        accLo = fmaf(c[0], e8m0<2>(cs), accLo);
        accHi = fmaf(c[2], e8m0<3>(cs), accHi);
        xq += xStride;
    }
    wait_stages<0>(); // no copy may still target this block's shared memory when it exits
    // Sum the quad (t = 0 holds the hi column, t = 1 the lo column), then the K slices of the tile.
    accLo += __shfl_xor_sync(0xffffffffu, accLo, 1);
    accLo += __shfl_xor_sync(0xffffffffu, accLo, 2);
    accHi += __shfl_xor_sync(0xffffffffu, accHi, 1);
    accHi += __shfl_xor_sync(0xffffffffu, accHi, 2);
    if (t == 0) {
        partial[warp][g] = accLo;
        partial[warp][g + 8] = accHi;
    }
    __syncthreads();
    if (active && ks == 0 && lane < 16) {
        const int row = tile * 16 + lane;
        if (row < N) {
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k < MOE4J_KSPLIT; ++k) sum += partial[warp + k][lane];
            // Undo the weights' 2^-14 and x's 2^e (exact powers of two; 14 - e stays within float's exponents).
            out[(size_t)blockIdx.y * N + row] = sum * __uint_as_float((u32)(127 + 14 - e) << 23);
        }
    }
}

// Up to PIECE_PAIRS routed pairs of one expert in one block (decode batches where experts repeat: T = 16 for
// gpt-oss-20b routes ~64 pairs to ~28 experts): their x rows fill B columns 2q (hi) and 2q + 1 (lo), which the
// one-pair kernel above leaves zero, so the pairs share one decode of the weights and the same MMAs. Same ring and
// loop as moe_gemv_mxfp4_mma, kept as a separate kernel: folding both into one source (a pairs parameter) measured
// 5 us slower at T = 1 on the H100 for reasons the SASS did not make obvious, so the one-pair kernel stays as it was.
// Grid: x over groups of MOE4J_TILES row tiles, y over pieces[blockIdx.y] = (expert, first pair, count <= 4, 0) of
// pairs sorted by expert.
#define PIECE_PAIRS 4
// B-fragment words per k16 step: for each of the 2 * PIECE_PAIRS columns (pair q: hi 2q, lo 2q + 1) the four
// lanes' uint2 (k 2t, 2t+1 | k 2t+8, 2t+9).
#define PXB_STEP (8 * PIECE_PAIRS)

extern "C" __global__ void __launch_bounds__(MMA_WARPS * 32)
moe_gemv_mxfp4_mma_pieces(const uint4* __restrict__ codes, const u32* __restrict__ scales, const float* __restrict__ x,
                          const int2* __restrict__ routes, const int4* __restrict__ pieces, float* __restrict__ out,
                          int N, int K, int NT, int BP, int routesReady) {
    constexpr int S = MOE4J_DEPTH;
    constexpr int P = PIECE_PAIRS;
    // Dynamic shared memory: x as B fragments [BP * 4 k-steps][2P columns][4 t] then a zero area of 4 steps; after
    // it, each warp's ring: S code slots of 512 bytes (32 lanes x 16), then S scale slots of 128 (32 lanes x 4).
    extern __shared__ uint2 xb[];
    __shared__ float partial[MMA_WARPS][16][P];
    __shared__ int rowExp[P];

    if (!routesReady) wait_prior_grid(); // as in moe_gemv_mxfp4_mma: pieces and routes come with the routes
    const int4 piece = load_l2(pieces + blockIdx.y);
    if (piece.z == 0) {
        // a plan built on the device pads its pieces to a fixed count (the grid of a recorded step) with empty ones
        wait_prior_grid();
        return;
    }
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int g = lane >> 2;
    const int t = lane & 3;
    const int tile = blockIdx.x * MOE4J_TILES + warp / MOE4J_KSPLIT;
    const int ks = warp % MOE4J_KSPLIT;
    const bool active = tile < NT; // inactive warps still take part in the block's barriers
    const size_t tileBase = ((size_t)piece.x * NT + min(tile, NT - 1)) * BP;
    // This warp's block pairs are ks, ks + KSPLIT, ...: iterations of the main loop.
    const int iterations = active && ks < BP ? (BP - ks + MOE4J_KSPLIT - 1) / MOE4J_KSPLIT : 0;

    // The ring's first S - 1 stages go out before x is prepared, so their latency overlaps the preparation.
    // Every stage commits a group, empty or not, so that "group i is complete" is always wait_group(S - 2).
    char* ring = reinterpret_cast<char*>(xb + BP * 4 * PXB_STEP + 4 * PXB_STEP) + warp * S * 640;
    const u32 codeRing = smem_address(ring) + 16 * lane;
    const u32 scaleRing = smem_address(ring + S * 512) + 4 * lane;
    const uint4* codeNext = codes + (tileBase + ks) * 32 + lane;
    const u32* scaleNext = scales + (tileBase + ks) * 8 + g;
#pragma unroll
    for (int d = 0; d < S - 1; ++d) {
        if (d < iterations) {
            issue_stage(codeRing + 512 * d, scaleRing + 128 * d, codeNext, scaleNext);
            codeNext += MOE4J_KSPLIT * 32;
            scaleNext += MOE4J_KSPLIT * 8;
        }
        commit_stage();
    }

    enter_after_prior_grid();

    // Each x row -> power-of-two scale 2^e putting max|x| in [2^14, 2^15) -> two fp16 parts in B-fragment order,
    // one warp a row, the rows of a piece side by side (a block-wide maximum per row, with two block barriers a row,
    // put the rows one after another on every block's critical path). Loads go out PX_BATCH a lane before any is
    // used: issue is in order, so a loop that uses each load right away pays one L2 round trip per iteration. K is a
    // multiple of 32 for MXFP4, so x rows are whole float4s. Pairs past the piece's count are not prepared: their
    // columns read the zero area.
    constexpr int PX_BATCH = 8; // 8 float4 a lane: 32 registers, K = 2880 in three rounds
    const int nv = K >> 2;
    u16* xh = reinterpret_cast<u16*>(xb);
    for (int q = warp; q < piece.z; q += MMA_WARPS) {
        const float4* xv = reinterpret_cast<const float4*>(x + (size_t)routes[piece.y + q].y * K);
        float m = 0.0f;
        for (int b = lane; b < nv; b += PX_BATCH * 32) {
            float4 v[PX_BATCH];
#pragma unroll
            for (int u = 0; u < PX_BATCH; ++u) {
                const int i = b + u * 32;
                v[u] = i < nv ? __ldg(xv + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < PX_BATCH; ++u) {
                m = fmaxf(m, fmaxf(fmaxf(fabsf(v[u].x), fabsf(v[u].y)), fmaxf(fabsf(v[u].z), fabsf(v[u].w))));
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        const int biased = (int)((__float_as_uint(m) >> 23) & 0xFF);
        const int e = m == 0.0f ? 0 : max(-100, min(100, 141 - biased));
        if (lane == 0) rowExp[q] = e;
        const float up = __uint_as_float((u32)(127 + e) << 23);
        // Element k lands in k-step k/16 at pair q's hi word (t = (k%8)/2), register (k%16)/8, half k%2; its lo
        // word is 4 uint2 further.
        for (int b = lane; b < BP * 16; b += PX_BATCH * 32) {
            float4 v[PX_BATCH];
#pragma unroll
            for (int u = 0; u < PX_BATCH; ++u) {
                const int i = b + u * 32;
                v[u] = i < nv ? __ldg(xv + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < PX_BATCH; ++u) {
                const int i = b + u * 32;
                if (i < BP * 16) {
                    const float vals[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        const int k = 4 * i + c;
                        const int step = k >> 4, r = k & 15;
                        const int idx = ((step * PXB_STEP + 8 * q + ((r & 7) >> 1)) * 2 + (r >> 3)) * 2 + (r & 1);
                        u16 hi, lo;
                        split2(vals[c] * up, hi, lo);
                        xh[idx] = hi;
                        xh[idx + 16] = lo;
                    }
                }
            }
        }
    }
    for (int i = threadIdx.x; i < 4 * PXB_STEP; i += blockDim.x) xb[BP * 4 * PXB_STEP + i] = make_uint2(0u, 0u);
    __syncthreads();

    // Lane (g, t) supplies B column g: pair g / 2, part g % 2 (columns of pairs past the count read zeros). C columns
    // 2t and 2t + 1 then hold pair t's hi and lo products of rows g and g + 8: lane t accumulates pair t.
    const bool suppliesB = g < 2 * piece.z;
    const int column = g;
    const uint2* xq = suppliesB ? xb + ks * 4 * PXB_STEP + column * 4 + t : xb + BP * 4 * PXB_STEP;
    const int xStride = suppliesB ? MOE4J_KSPLIT * 4 * PXB_STEP : 0;

    float accLo = 0.0f, accHi = 0.0f;
    for (int i = 0; i < iterations; ++i) {
        wait_stages<S - 2>(); // stage i has landed (this lane's own copies)
        const int slot = i % S;
        const uint4 q = *reinterpret_cast<const uint4*>(ring + 512 * slot + 16 * lane);
        const u32 cs = *reinterpret_cast<const u32*>(ring + S * 512 + 128 * slot + 4 * lane);
        // Refill the slot read in the previous iteration with stage i + S - 1.
        if (i + S - 1 < iterations) {
            const int refill = (i + S - 1) % S;
            issue_stage(codeRing + 512 * refill, scaleRing + 128 * refill, codeNext, scaleNext);
            codeNext += MOE4J_KSPLIT * 32;
            scaleNext += MOE4J_KSPLIT * 8;
        }
        commit_stage();
        u32 a0[4], b0[4], a1[4], b1[4];
        decode_word(q.x, a0); // row g,   MX block 2bp
        decode_word(q.y, b0); // row g+8, MX block 2bp
        decode_word(q.z, a1); // row g,   MX block 2bp+1
        decode_word(q.w, b1); // row g+8, MX block 2bp+1
        float c[4];
        mma16816(c, a0[0], b0[0], a0[1], b0[1], xq[0], 0.0f, 0.0f, 0.0f, 0.0f);
        mma16816(c, a0[2], b0[2], a0[3], b0[3], xq[PXB_STEP], c[0], c[1], c[2], c[3]);
        accLo = fmaf(c[0] + c[1], e8m0<0>(cs), accLo);
        accHi = fmaf(c[2] + c[3], e8m0<1>(cs), accHi);
        mma16816(c, a1[0], b1[0], a1[1], b1[1], xq[2 * PXB_STEP], 0.0f, 0.0f, 0.0f, 0.0f);
        mma16816(c, a1[2], b1[2], a1[3], b1[3], xq[3 * PXB_STEP], c[0], c[1], c[2], c[3]);
        accLo = fmaf(c[0] + c[1], e8m0<2>(cs), accLo);
        accHi = fmaf(c[2] + c[3], e8m0<3>(cs), accHi);
        xq += xStride;
    }
    wait_stages<0>(); // no copy may still target this block's shared memory when it exits
    if (t < P) {
        partial[warp][g][t] = accLo;
        partial[warp][g + 8][t] = accHi;
    }
    __syncthreads();
    // Sum the K slices of the tile; undo the weights' 2^-14 and x's 2^e (exact powers of two; 14 - e stays within
    // float's exponents).
    if (active && ks == 0) {
        for (int idx = lane; idx < 16 * P; idx += 32) {
            const int r = idx & 15, pq = idx >> 4;
            const int row = tile * 16 + r;
            if (row < N && pq < piece.z) {
                float sum = 0.0f;
#pragma unroll
                for (int k = 0; k < MOE4J_KSPLIT; ++k) sum += partial[warp + k][r][pq];
                out[(size_t)(piece.y + pq) * N + row] = sum * __uint_as_float((u32)(127 + 14 - rowExp[pq]) << 23);
            }
        }
    }
}

// The checkpoint layout (codes [experts][N][K/2], scales [experts][N][K/32]) of `experts` consecutive experts into
// the tiled layout above, one thread per output uint4. Rows past N and blocks past K/32 are zero codes with scale
// 127 (1.0), which contribute nothing.
extern "C" __global__ void moe_repack_mxfp4_mma(const u8* __restrict__ raw, const u8* __restrict__ rawScales,
                                                uint4* __restrict__ codes, u32* __restrict__ scales, int experts,
                                                int N, int K, int NT, int BP) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)experts * NT * BP * 32) return;
    const int lane = (int)(i & 31);
    const size_t tb = i >> 5;
    const int bp = (int)(tb % BP);
    const size_t rest = tb / BP;
    const int rt = (int)(rest % NT);
    const size_t e = rest / NT;
    const int g = lane >> 2, t = lane & 3;
    const int blocks = K / 32;
    const int magShift[4] = {9, 6, 3, 0};
    const int signBit[4] = {15, 12, 14, 13};
    u32 word[4];
    u32 scaleWord = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int row = rt * 16 + g + 8 * (j & 1);
        const int block = 2 * bp + (j >> 1);
        u32 w = 0;
        u32 sc = 127;
        if (row < N && block < blocks) {
            const u8* src = raw + ((e * N + row) * (size_t)(K / 2)) + 16 * block;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const u32 b = src[t + 4 * k]; // elements (2t + 8k', +1) of the block, k' = the pair index
                const u32 first = b & 15u, second = b >> 4;
                w |= (first & 7u) << magShift[k] | (first >> 3) << signBit[k];
                w |= (second & 7u) << (magShift[k] + 16) | (second >> 3) << (signBit[k] + 16);
            }
            sc = rawScales[(e * N + row) * (size_t)blocks + block];
        }
        word[j] = w;
        scaleWord |= sc << (8 * j);
    }
    codes[i] = make_uint4(word[0], word[1], word[2], word[3]);
    if (t == 0) scales[tb * 8 + g] = scaleWord;
}
