// BF16 grouped GEMV for the decode path. Weights [E, N, K] bf16, rows padded to 16 bytes (8 elements) on upload.
#include "moe4j_common.cuh"

struct Bf16 {
    static constexpr int EPC = 8;

    __device__ static __forceinline__ u32 load_scale(const void*, size_t, int, int, int) { return 0u; }

    // Word J holds elements 2J (low half) and 2J+1; a bf16 is the high half of the float with the same value.
    template <int J>
    __device__ static __forceinline__ void word_dot(const uint4 (&q)[MOE4J_ROWS], const float4* xs, int c,
                                                    float (&part)[MOE4J_ROWS]) {
        const float4 xv = xs[x_slot<EPC>(c, J / 2)];
        const float x0 = (J & 1) ? xv.z : xv.x;
        const float x1 = (J & 1) ? xv.w : xv.y;
#pragma unroll
        for (int r = 0; r < MOE4J_ROWS; ++r) {
            const u32 w = J == 0 ? q[r].x : J == 1 ? q[r].y : J == 2 ? q[r].z : q[r].w;
            float p = part[r];
            p = fmaf(__uint_as_float(w << 16), x0, p);
            p = fmaf(__uint_as_float(w & 0xFFFF0000u), x1, p);
            part[r] = p;
        }
    }

    __device__ static __forceinline__ float apply_chunk_scale(float part, u32, float acc) { return acc + part; }

    __device__ static __forceinline__ float row_scale(const void*, size_t) { return 1.0f; }
};

extern "C" __global__ void __launch_bounds__(MOE4J_WARPS * 32)
moe_gemv_bf16(const uint4* __restrict__ weights, const float* __restrict__ x, const int2* __restrict__ routes,
              float* __restrict__ out, int N, int K) {
    const int C = (K + 7) / 8;
    grouped_gemv<Bf16>(weights, nullptr, x, routes, out, N, K, C, 0, 1);
}
