// moe4j: MXFP4 tensor-core helpers shared by the grouped GEMV (gemv_mxfp4_mma.cu) and the prefill tile GEMM
// (gemm_mxfp4_tile.cu): the fragment-order code decode, E8M0 scales, mma.sync m16n8k16 f16 and cp.async.
// The layout they read is described in gemv_mxfp4_mma.cu (made by moe_repack_mxfp4_mma).
#pragma once
#include "moe4j_common.cuh"

__device__ __forceinline__ void decode_word(u32 w, u32 (&h)[4]) {
    h[0] = w & 0x8E008E00u;
    h[1] = (w << 3) & 0x8E008E00u;
    h[2] = ((w << 6) & 0x0E000E00u) | ((w << 1) & 0x80008000u);
    h[3] = ((w << 9) & 0x0E000E00u) | ((w << 2) & 0x80008000u);
}

// E8M0 byte `byteIndex` of a scale word as the float 2^(s - 127). The plain form is exact for 1..254; stacks that
// contain 0 (2^-127, a float subnormal) or 255 (NaN) are compiled with MOE4J_EXACT_E8M0, chosen at upload.
template <int byteIndex>
__device__ __forceinline__ float e8m0(u32 word) {
    const u32 bits = (byteIndex < 3 ? word << (23 - 8 * byteIndex) : word >> 1) & 0x7F800000u;
#ifdef MOE4J_EXACT_E8M0
    if (bits == 0u) return __uint_as_float(0x00400000u);
    if (bits == 0x7F800000u) return __uint_as_float(0x7FC00000u);
#endif
    return __uint_as_float(bits);
}

__device__ __forceinline__ void mma16816(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3, uint2 b, float c0, float c1,
                                         float c2, float c3) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b.x), "r"(b.y), "f"(c0), "f"(c1), "f"(c2), "f"(c3));
}

__device__ __forceinline__ u16 f32_to_f16(float v) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

__device__ __forceinline__ float f16_to_f32(u16 h) {
    float v;
    asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(h));
    return v;
}

__device__ __forceinline__ u32 smem_address(const void* p) {
    u32 a;
    asm("{ .reg .u64 t;\n\t cvta.to.shared.u64 t, %1;\n\t cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

// One stage of a warp's ring: lane l copies its 16 bytes of codes and the 4-byte scale word of its row group
// (lanes of one group copy the same word; each lane then reads only what it copied, so no cross-lane sync).
__device__ __forceinline__ void issue_stage(u32 codeSlot, u32 scaleSlot, const uint4* code, const u32* scale) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(codeSlot), "l"(code) : "memory");
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(scaleSlot), "l"(scale) : "memory");
}

__device__ __forceinline__ void commit_stage() { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int PENDING>
__device__ __forceinline__ void wait_stages() { asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory"); }

// Shared by the prefill GEMMs (gemm_mxfp4_tile.cu, gemm_mxfp4_wgmma.cu): the per-row f16 pre-scaling of decoded weights.
__device__ __forceinline__ float pow2(int n) { return __uint_as_float((u32)(127 + n) << 23); }

// f16x2 (both halves) of 2^(s - r + 14), which turns decode_word's e2m1 * 2^-14 into e2m1 * 2^(s - r): exponent
// field s - r + 29. s <= r for every real block; the repack's padding blocks (zero codes, scale 127) may exceed r and
// are clamped, since an infinite multiplier would turn their zeros into NaN. Fields of 0 and below (s - r <= -29)
// give 0, not the subnormal multiplier 2^(s - r + 14): a weight is at most 6 * 2^-14, so its product with such a
// multiplier is at most 6 * 2^-29, under half the smallest f16 subnormal, and rounds to 0 either way.
__device__ __forceinline__ u32 f16_pow2(int s, int r) {
    const int field = max(min(s - r, 0) + 29, 0);
    return (u32)field * 0x04000400u; // field << 10 in both halves
}

__device__ __forceinline__ u32 hmul2(u32 a, u32 b) {
    u32 d;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}

// One lane's A fragments for a (16-row tile, 64-element block pair) of the fragment-order layout: q.x / q.y are rows
// g / g+8 of block 2bp, q.z / q.w of block 2bp+1; sw holds their four E8M0 scales in that order. Each block is
// decoded and multiplied by 2^(s - R) with R = rlo (row g) or rhi (row g+8), the row's largest scale exponent.
// a[j] are the four f16x2 words of word j of q (decode_word order).
__device__ __forceinline__ void decode_prescaled(uint4 q, u32 sw, int rlo, int rhi, u32 (&a)[4][4]) {
    decode_word(q.x, a[0]);
    decode_word(q.y, a[1]);
    decode_word(q.z, a[2]);
    decode_word(q.w, a[3]);
    const u32 m[4] = {f16_pow2((int)(sw & 0xFFu), rlo), f16_pow2((int)((sw >> 8) & 0xFFu), rhi),
                      f16_pow2((int)((sw >> 16) & 0xFFu), rlo), f16_pow2((int)(sw >> 24), rhi)};
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int k = 0; k < 4; ++k) a[j][k] = hmul2(a[j][k], m[j]);
}
