// MXFP4 grouped expert GEMM for prefill on Hopper's warpgroup MMA (wgmma.mma_async m64nNk16, f16 inputs, f32
// accumulation), sm_90a only. Same problem, arguments and output as gemm_mxfp4_tile.cu (read its header first):
// a block computes WG_GROUPS * WG_M * 64 weight rows of one expert for up to WG_N routed pairs: each of its
// WG_GROUPS warpgroups multiplies WG_M groups of 64 rows by the same x tile.
//
// Why a second tile kernel: mma.sync is synchronous, so each warp alternates between decoding weights and waiting
// on its MMAs, and the tensor cores sit idle while it decodes. wgmma runs asynchronously: a warpgroup issues the
// four k16 MMAs of a block pair, then decodes the next block pair's weights while they run.
//
// A (weights) comes from registers: the fragment-order layout's 16 bytes per lane are already the A fragments of
// a 16-row tile (warp w % 4 of a warpgroup owns rows 16 * (w % 4) of its 64), decoded and pre-scaled by
// decode_prescaled exactly as in the mma.sync kernel. A's registers must stay untouched until the MMAs reading them
// retire, hence two A buffers used alternately (the main loop is unrolled by two so they stay registers) and
// wgmma.wait_group 1 after each block pair.
//
// B (x, the pairs' f16 rows) comes from shared memory through a wgmma descriptor: a stage holds WG_N rows of one
// block pair, 64 halves = 128 bytes each, in the canonical K-major 128-byte-swizzle layout (16-byte chunk c of row
// r at r * 128 + ((c ^ (r % 8)) * 16), 8-row groups 1024 bytes apart, stage base 1024-aligned), written by
// cp.async; each k16 step starts 32 bytes further. Each stage also carries every lane's code and scale words, so
// the weights are requested WG_STAGES - 2 block pairs ahead without registers. A stage is overwritten two block
// pairs after its MMAs were issued: wait_group 1 at the end of the previous iteration and the barrier at the top of
// this one guarantee that every warpgroup's MMAs on it have retired.
//
// Grid: x over groups of row tiles (fastest), y over M tiles, as in gemm_mxfp4_tile.cu and for its reason.
#include "mxfp4_mma.cuh"

#ifndef WG_GROUPS
#define WG_GROUPS 2
#endif
#ifndef WG_N
#define WG_N 128
#endif
#ifndef WG_M
#define WG_M 1
#endif
#ifndef WG_STAGES
#define WG_STAGES 4
#endif
#define WG_WARPS (4 * WG_GROUPS)
#define WG_ACC (WG_N / 2)
#define WG_AHEAD (WG_STAGES - 2)
#define WG_LANES (WG_WARPS * 32)
#define STAGE_X (WG_N * 128)
#define STAGE_W (WG_M * WG_LANES * 16)
#define STAGE_S (WG_M * WG_LANES * 4)
#define STAGE_BYTES ((STAGE_X + STAGE_W + STAGE_S + 1023) / 1024 * 1024)

#if WG_N != 16 && WG_N != 32 && WG_N != 64 && WG_N != 128 && WG_N != 256
#error "WG_N must be 16, 32, 64, 128 or 256"
#endif

// wgmma m64nNk16 f32 += f16 * f16 for N = WG_N, A from registers, B from a shared-memory descriptor (K-major, no
// transpose); d is the warp's share of the 64 x N accumulator.
#if WG_N == 16
__device__ __forceinline__ void wgmma_k16(float (&d)[8], const u32 (&a)[4], u64 desc) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %13, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7"
                 "}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
}

#elif WG_N == 32
__device__ __forceinline__ void wgmma_k16(float (&d)[16], const u32 (&a)[4], u64 desc) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %21, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
                 "}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
}

#elif WG_N == 64
__device__ __forceinline__ void wgmma_k16(float (&d)[32], const u32 (&a)[4], u64 desc) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %37, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
}

#elif WG_N == 128
__device__ __forceinline__ void wgmma_k16(float (&d)[64], const u32 (&a)[4], u64 desc) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
}

#else
__device__ __forceinline__ void wgmma_k16(float (&d)[128], const u32 (&a)[4], u64 desc) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %133, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "}, {%128, %129, %130, %131}, %132, p, 1, 1, 0;\n\t}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(1));
}
#endif

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

// After the last wait: keeps the compiler from moving the epilogue's reads of the accumulators above it (the
// MMAs write them asynchronously, which the compiler does not know).
__device__ __forceinline__ void pin(float (&d)[WG_ACC]) {
#pragma unroll
    for (int i = 0; i < WG_ACC; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Descriptor of a K-major, 128-byte-swizzled B tile at shared address `address` (1024-aligned, or 32 bytes past for
// later k16 steps): start >> 4 in bits 0-13, leading byte offset 16 (unused with this swizzle) in 16-29, stride
// byte offset 1024 (between 8-row groups) in 32-45, swizzle mode 1 (128 bytes) in 62-63.
__device__ __forceinline__ u64 b_desc(u32 address) {
    return (u64)((address & 0x3FFFFu) >> 4) | ((u64)(16 >> 4) << 16) | ((u64)(1024 >> 4) << 32) | (1ull << 62);
}

extern "C" __global__ void __launch_bounds__(WG_WARPS * 32)
moe_gemm_mxfp4_wgmma(const uint4* __restrict__ codes, const u32* __restrict__ scales, const u16* __restrict__ xh,
                     const int* __restrict__ xexp, const int4* __restrict__ mtiles, float* __restrict__ out, int N,
                     int NT, int BP, const u8* __restrict__ rowExp) {
    extern __shared__ __align__(1024) u8 smem[];
    const u32 base = (smem_address(smem) + 1023u) & ~1023u;
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
    // This warp's 16-row tiles, one in each of its warpgroup's WG_M groups of 64 rows.
    int rt[WG_M], rlo[WG_M], rhi[WG_M];
    const uint4* wsrc[WG_M];
    const u32* ssrc[WG_M];
#pragma unroll
    for (int m = 0; m < WG_M; ++m) {
        rt[m] = blockIdx.x * (WG_WARPS * WG_M) + ((warp >> 2) * WG_M + m) * 4 + (warp & 3);
        const size_t tile = (size_t)e * NT + min(rt[m], NT - 1);
        wsrc[m] = codes + tile * BP * 32 + lane;
        ssrc[m] = scales + tile * BP * 8 + g;
        rlo[m] = rowExp[tile * 16 + g];
        rhi[m] = rowExp[tile * 16 + g + 8];
    }
    const size_t xPitch = (size_t)BP * 64;

    // Block pair bp into stage `stage`: the x rows (rows past count zero-filled: cp.async with a source size of 0)
    // and this lane's code and scale words.
    auto load_stage = [&](int bp, int stage) {
        const u32 sb = base + (u32)stage * STAGE_BYTES;
        for (int c = tid; c < WG_N * 8; c += WG_WARPS * 32) {
            const int row = c >> 3;
            const int chunk = c & 7;
            const u16* src = xh + (size_t)(first + min(row, count - 1)) * xPitch + bp * 64 + chunk * 8;
            const u32 dst = sb + (u32)(row * 128 + ((chunk ^ (row & 7)) << 4));
            const int bytes = row < count ? 16 : 0;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
        }
#pragma unroll
        for (int m = 0; m < WG_M; ++m) {
            const u32 slot = m * WG_LANES + tid;
            issue_stage(sb + STAGE_X + slot * 16, sb + STAGE_X + STAGE_W + slot * 4, wsrc[m] + (size_t)bp * 32,
                        ssrc[m] + (size_t)bp * 8);
        }
    };
#pragma unroll
    for (int s = 0; s < WG_AHEAD; ++s) {
        if (s < BP) load_stage(s, s);
        commit_stage();
    }

    float acc[WG_M][WG_ACC];
#pragma unroll
    for (int m = 0; m < WG_M; ++m)
#pragma unroll
        for (int i = 0; i < WG_ACC; ++i) acc[m][i] = 0.0f;

    // One block pair: wait for its stage, refill the stage freed two block pairs ago, decode this lane's weights
    // into `a` (the buffer whose MMAs retired at the end of the previous step) and issue the four k16 MMAs.
    auto step = [&](int bp, u32 (&a)[WG_M][4][4]) {
        wait_stages<WG_AHEAD - 1>();
        __syncthreads();
        if (bp + WG_AHEAD < BP) load_stage(bp + WG_AHEAD, (bp + WG_AHEAD) % WG_STAGES);
        commit_stage();
        const u32 sb = base + (u32)(bp % WG_STAGES) * STAGE_BYTES;
#pragma unroll
        for (int m = 0; m < WG_M; ++m) {
            const u32 slot = m * WG_LANES + tid;
            uint4 q;
            u32 sw;
            asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                         : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w)
                         : "r"(sb + STAGE_X + slot * 16));
            asm volatile("ld.shared.u32 %0, [%1];" : "=r"(sw) : "r"(sb + STAGE_X + STAGE_W + slot * 4));
            u32 h[4][4];
            decode_prescaled(q, sw, rlo[m], rhi[m], h);
            // k16 step s: rows g / g+8 of word pair (2 * (s / 2), +1), k halves (s % 2) * 2 and +1 (mma A order).
#pragma unroll
            for (int s = 0; s < 4; ++s) {
                const int j = (s >> 1) * 2;
                const int k = (s & 1) * 2;
                a[m][s][0] = h[j][k];
                a[m][s][1] = h[j + 1][k];
                a[m][s][2] = h[j][k + 1];
                a[m][s][3] = h[j + 1][k + 1];
            }
        }
        wg_fence();
        const u64 desc = b_desc(sb);
#pragma unroll
        for (int m = 0; m < WG_M; ++m)
#pragma unroll
            for (int s = 0; s < 4; ++s) wgmma_k16(acc[m], a[m][s], desc + 2 * s);
        wg_commit();
        wg_wait<1>();
    };
    // Two A buffers, alternating. The loop runs whole pairs of steps and the odd last one after it: with the
    // second step of a pair conditional, ptxas would see a path on which a0 is rewritten while the MMAs reading
    // it are pending, and serialize every MMA (its C7513 "Potential Performance Loss").
    u32 a0[WG_M][4][4], a1[WG_M][4][4];
    int bp = 0;
    for (; bp + 1 < BP; bp += 2) {
        step(bp, a0);
        step(bp + 1, a1);
    }
    if (bp < BP) step(bp, a0);
    wg_wait<0>();
#pragma unroll
    for (int m = 0; m < WG_M; ++m) pin(acc[m]);

    // Accumulator fragment: per 8-pair slice n, acc[4n], acc[4n+1] = (row g, pairs 2t, 2t+1), acc[4n+2], [4n+3] =
    // (row g+8, same pairs). acc holds sum (e2m1 * 2^(s - R)) * x * 2^xexp: times 2^(R - 127) and 2^-xexp.
#pragma unroll
    for (int m = 0; m < WG_M; ++m) {
        if (rt[m] >= NT) continue;
        const int row = rt[m] * 16 + g;
        const float slo = ldexpf(1.0f, rlo[m] - 127);
        const float shi = ldexpf(1.0f, rhi[m] - 127);
#pragma unroll
        for (int n = 0; n < WG_N / 8; ++n) {
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int pair = n * 8 + 2 * t + half;
                if (pair >= count) continue;
                const float unscale = pow2(-xexp[first + pair]);
                float* o = out + (size_t)(first + pair) * N;
                if (row < N) o[row] = acc[m][4 * n + half] * slo * unscale;
                if (row + 8 < N) o[row + 8] = acc[m][4 * n + 2 + half] * shi * unscale;
            }
        }
    }
}
