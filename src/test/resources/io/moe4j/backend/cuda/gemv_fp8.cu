// FP8 E4M3 (OCP "fn": no infinities, S.1111.111 is NaN) with one float32 scale per output row (compressed-tensors
// channel-wise FP8) grouped GEMV for the decode path. Weights [E, N, K] bytes, rows padded to 16 bytes on upload.
#include "moe4j_common.cuh"

struct Fp8 {
    static constexpr int EPC = 16;

    __device__ static __forceinline__ u32 load_scale(const void*, size_t, int, int, int) { return 0u; }

    // Word J holds elements 4J..4J+3; the hardware converts two E4M3 at a time to an exact fp16 pair (sm_89+).
    template <int J>
    __device__ static __forceinline__ void word_dot(const uint4 (&q)[MOE4J_ROWS], const float4* xs, int c,
                                                    float (&part)[MOE4J_ROWS]) {
        const float4 xv = xs[x_slot<EPC>(c, J)];
#pragma unroll
        for (int r = 0; r < MOE4J_ROWS; ++r) {
            const u32 w = J == 0 ? q[r].x : J == 1 ? q[r].y : J == 2 ? q[r].z : q[r].w;
            u32 h01, h23;
            asm("{ .reg .b16 lo, hi;\n\t mov.b32 {lo, hi}, %2;\n\t cvt.rn.f16x2.e4m3x2 %0, lo;\n\t"
                " cvt.rn.f16x2.e4m3x2 %1, hi; }" : "=r"(h01), "=r"(h23) : "r"(w));
            float a, b, d, e;
            half2_to_float2(h01, a, b);
            half2_to_float2(h23, d, e);
            float p = part[r];
            p = fmaf(a, xv.x, p);
            p = fmaf(b, xv.y, p);
            p = fmaf(d, xv.z, p);
            p = fmaf(e, xv.w, p);
            part[r] = p;
        }
    }

    __device__ static __forceinline__ float apply_chunk_scale(float part, u32, float acc) { return acc + part; }

    __device__ static __forceinline__ float row_scale(const void* scales, size_t row) {
        return __ldg(static_cast<const float*>(scales) + row);
    }
};

extern "C" __global__ void __launch_bounds__(MOE4J_WARPS * 32)
moe_gemv_fp8(const uint4* __restrict__ codes, const float* __restrict__ scales, const float* __restrict__ x,
             const int2* __restrict__ routes, float* __restrict__ out, int N, int K) {
    const int C = (K + 15) / 16;
    grouped_gemv<Fp8>(codes, scales, x, routes, out, N, K, C, 0, 1);
}
