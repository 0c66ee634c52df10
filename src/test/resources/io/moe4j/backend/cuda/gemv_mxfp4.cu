// MXFP4 (OCP microscaling FP4, as gpt-oss ships it) grouped GEMV for the decode path.
// Weights: codes [E, N, K/2] bytes, element 2i in the low nibble of byte i; an E2M1 code is sign (bit 3),
// exponent (bits 2-1), mantissa (bit 0). Scales: [E, N, K/32] E8M0 bytes. value = e2m1(code) * 2^(scale - 127).
#include "moe4j_common.cuh"

struct Mxfp4 {
    static constexpr int EPC = 32; // 16 bytes = 32 codes = exactly one MX block, so one scale per chunk

    __device__ static __forceinline__ u32 load_scale(const void* scales, size_t row, int c, int stride, int) {
        return __ldg(static_cast<const u8*>(scales) + row * stride + c); // one E8M0 byte per chunk
    }

    // Word J of each row's chunk holds elements 8J..8J+7 as nibbles 0..7. Nibbles k and k+4 become one fp16 pair:
    // the three magnitude bits go to fp16 bits 9-11 (exponent bits 10-11, top mantissa bit 9) and the sign to bit
    // 15. Read as fp16 that is exactly e2m1 * 2^-14 — code 1 (0.5) lands on the fp16 subnormal 2^-15 — so the
    // conversion to float is exact and the 2^14 goes back in with the block scale.
    template <int J>
    __device__ static __forceinline__ void word_dot(const uint4 (&q)[MOE4J_ROWS], const float4* xs, int c,
                                                    float (&part)[MOE4J_ROWS]) {
        const float4 xa = xs[x_slot<EPC>(c, 2 * J)];     // x[8J .. 8J+3]
        const float4 xb = xs[x_slot<EPC>(c, 2 * J + 1)]; // x[8J+4 .. 8J+7]
#pragma unroll
        for (int r = 0; r < MOE4J_ROWS; ++r) {
            const u32 w = J == 0 ? q[r].x : J == 1 ? q[r].y : J == 2 ? q[r].z : q[r].w;
            const u32 h0 = ((w << 9) & 0x0E000E00u) | ((w << 12) & 0x80008000u); // nibbles 0, 4
            const u32 h1 = ((w << 5) & 0x0E000E00u) | ((w << 8) & 0x80008000u);  // nibbles 1, 5
            const u32 h2 = ((w << 1) & 0x0E000E00u) | ((w << 4) & 0x80008000u);  // nibbles 2, 6
            const u32 h3 = ((w >> 3) & 0x0E000E00u) | (w & 0x80008000u);         // nibbles 3, 7
            float a, b;
            float p = part[r];
            half2_to_float2(h0, a, b); p = fmaf(a, xa.x, p); p = fmaf(b, xb.x, p);
            half2_to_float2(h1, a, b); p = fmaf(a, xa.y, p); p = fmaf(b, xb.y, p);
            half2_to_float2(h2, a, b); p = fmaf(a, xa.z, p); p = fmaf(b, xb.z, p);
            half2_to_float2(h3, a, b); p = fmaf(a, xa.w, p); p = fmaf(b, xb.w, p);
            part[r] = p;
        }
    }

    // acc += part * 2^14 * 2^(s - 127). Both factors are exact powers of two; E8M0 0 is 2^-127 (a float
    // subnormal) and 255 is NaN, per the OCP MX spec.
    __device__ static __forceinline__ float apply_chunk_scale(float part, u32 s, float acc) {
        float scale = __uint_as_float(s << 23);
        if (s == 0u) scale = __uint_as_float(0x00400000u);
        if (s == 255u) scale = __uint_as_float(0x7FC00000u);
        return fmaf(part * 16384.0f, scale, acc);
    }

    __device__ static __forceinline__ float row_scale(const void*, size_t) { return 1.0f; }
};

extern "C" __global__ void __launch_bounds__(MOE4J_WARPS * 32)
moe_gemv_mxfp4(const uint4* __restrict__ codes, const u8* __restrict__ scales, const float* __restrict__ x,
               const int2* __restrict__ routes, float* __restrict__ out, int N, int K) {
    const int C = K / 32;
    grouped_gemv<Mxfp4>(codes, scales, x, routes, out, N, K, C, C, 1);
}
