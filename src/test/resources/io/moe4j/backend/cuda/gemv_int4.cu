// INT4 with grouped scales (compressed-tensors "pack-quantized", symmetric) grouped GEMV for the decode path.
// Weights: codes [E, N, K/2] bytes, element 2i in the low nibble of byte i, stored offset by 8: value = (u - 8)
// * scale. Scales: [E, N, K/G] bf16, G a multiple of 32 (a 32-element chunk never straddles two groups) or G = K
// (one scale per row). Rows are padded to whole 16-byte chunks on upload; the padded x is zero there.
#include "moe4j_common.cuh"

struct Int4 {
    static constexpr int EPC = 32;

    __device__ static __forceinline__ u32 load_scale(const void* scales, size_t row, int c, int stride,
                                                     int groupChunks) {
        return __ldg(static_cast<const u16*>(scales) + row * stride + c / groupChunks);
    }

    // Nibbles k and k+4 go into the mantissas of an fp16 pair with exponent 1024 (0x6400): the pair reads as
    // (1024 + u_k, 1024 + u_k+4), and one f16x2 subtraction of 1032 leaves u - 8 exactly.
    template <int J>
    __device__ static __forceinline__ void word_dot(const uint4 (&q)[MOE4J_ROWS], const float4* xs, int c,
                                                    float (&part)[MOE4J_ROWS]) {
        const float4 xa = xs[x_slot<EPC>(c, 2 * J)];
        const float4 xb = xs[x_slot<EPC>(c, 2 * J + 1)];
#pragma unroll
        for (int r = 0; r < MOE4J_ROWS; ++r) {
            const u32 w = J == 0 ? q[r].x : J == 1 ? q[r].y : J == 2 ? q[r].z : q[r].w;
            float p = part[r];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                u32 h = ((w >> (4 * k)) & 0x000F000Fu) | 0x64006400u;
                asm("sub.f16x2 %0, %0, %1;" : "+r"(h) : "r"(0x64086408u));
                float a, b;
                half2_to_float2(h, a, b);
                const float xk = k == 0 ? xa.x : k == 1 ? xa.y : k == 2 ? xa.z : xa.w;
                const float xk4 = k == 0 ? xb.x : k == 1 ? xb.y : k == 2 ? xb.z : xb.w;
                p = fmaf(a, xk, p);
                p = fmaf(b, xk4, p);
            }
            part[r] = p;
        }
    }

    __device__ static __forceinline__ float apply_chunk_scale(float part, u32 s, float acc) {
        return fmaf(part, __uint_as_float(s << 16), acc); // bf16 -> float is the high half of the float
    }

    __device__ static __forceinline__ float row_scale(const void*, size_t) { return 1.0f; }
};

extern "C" __global__ void __launch_bounds__(MOE4J_WARPS * 32)
moe_gemv_int4(const uint4* __restrict__ codes, const u16* __restrict__ scales, const float* __restrict__ x,
              const int2* __restrict__ routes, float* __restrict__ out, int N, int K, int groupsPerRow,
              int groupChunks) {
    const int C = (K + 31) / 32;
    grouped_gemv<Int4>(codes, scales, x, routes, out, N, K, C, groupsPerRow, groupChunks);
}
