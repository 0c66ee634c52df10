// Timing-only microbenchmark (not part of the engine): what one row's input stage costs on a decode step's chain of
// kernels, and which part of it. Each variant is a chain of CHAIN one-block kernels (overlapped launches, one CUDA
// graph, as a decode step records them), every kernel reading the row the one before wrote (2048 floats, Qwen3's
// hidden size) and writing its own:
//   empty      the wait and one float written (what a dependent kernel costs at all)
//   copy       the row through shared memory (load, barrier, store)
//   fp8_group  copy with moe4j_quant.cuh's qdq_row, FP8 E4M3 groups of 128 (the Qwen3 / DeepSeek FP8 input rule)
//   fp8_token  the same with one dynamic scale for the row
//   mx_fp4     the same with MXFP4 blocks of 32
//   group_amax copy with each group's maximum taken (a warp a group) and nothing else
//   group_div  group_amax plus each element's float64 quotient by the group's scale, kept (no E4M3 rounding)
//   group_e4m3 fp8_group written out here (the quotient, its E4M3 rounding, times the scale)
//   group_recip group_e4m3 with the quotient as a product by the scale's reciprocal, divided only near a rounding
//              boundary (Fp8Quant.roundsAsQuotient's rule; the same codes)
//   group_float group_e4m3 with the quotient estimated in float (x times the scale's reciprocal as a float) and the
//              float64 division only where the estimate lies within 16 float ulps of an E4M3 rounding boundary
// Printed: the median graph time over the chain's length, µs a kernel.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -I src/main/resources/io/moe4j/backend/cuda
//   -o /tmp/row_stage_cost tools/row_stage_cost.cu && /tmp/row_stage_cost
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include "moe4j_quant.cuh"

#include "cuda_check.h"

constexpr int N = 2048;
constexpr int CHAIN = 200;
constexpr int REPS = 21;

enum Variant {
    EMPTY, COPY, FP8_GROUP, FP8_TOKEN, MX_FP4, GROUP_AMAX, GROUP_DIV, GROUP_E4M3, GROUP_RECIP, GROUP_FLOAT, VARIANTS
};
static const char* NAMES[] = {"empty", "copy", "fp8_group", "fp8_token", "mx_fp4", "group_amax", "group_div",
                              "group_e4m3", "group_recip", "group_float"};

// The E4M3 code of x / scale from a float estimate when that is certain: e = x * (float)(1 / scale) is within a few
// float ulps of the quotient, so where e is more than 16 ulps from every E4M3 rounding boundary (normal range: the
// 20 bits below E4M3's 3 mantissa bits not near 1 << 19; below 2^-6, where the grid is 2^-9, e * 2^9 not near k + 1/2)
// the float64 quotient rounds to the same code. Zero is exact; anything else goes to the division.
__device__ __forceinline__ double e4m3_quotient(float x, double scale, float inverse) {
    const float e = x * inverse;
    const float a = fabsf(e);
    if (a >= 0x1p-6f && a < 0x1p+10f) {
        const int below = __float_as_int(a) & ((1 << 20) - 1);
        if (abs(below - (1 << 19)) > 16) return (double)e;
    } else if (a < 0x1p-6f) {
        if (x == 0.0f) return (double)e;
        const float t = a * 0x1p+9f; // exact: a power-of-two scaling of a normal float
        if (fabsf(t - floorf(t) - 0.5f) > 0x1p-17f) return (double)e;
    }
    return (double)x / scale;
}

__device__ __forceinline__ double quotient_by_reciprocal(float x, double scale, double inverse) {
    const double q = (double)x * inverse;
    const double a = fabs(q);
    if (a >= 0x1p-6) {
        const long long below = __double_as_longlong(a) & ((1LL << 49) - 1);
        if (llabs(below - (1LL << 48)) > 16) return q;
    }
    return (double)x / scale;
}

__global__ void stage(const float* __restrict__ in, float* __restrict__ out, int variant) {
    __shared__ float s[N + 32];
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (variant == EMPTY) {
        if (threadIdx.x == 0) out[0] = in[0] + 1.0f;
        return;
    }
    for (int i = threadIdx.x; i < N / 4; i += blockDim.x) reinterpret_cast<float4*>(s)[i] = reinterpret_cast<const float4*>(in)[i];
    __syncthreads();
    if (variant == FP8_GROUP || variant == FP8_TOKEN || variant == MX_FP4) {
        const Qdq q = {variant == FP8_GROUP ? QDQ_FP8_GROUP : variant == FP8_TOKEN ? QDQ_FP8_TOKEN : QDQ_MX,
                       ELEM_E2M1, 128, nullptr, nullptr};
        qdq_row(s, N, q, 0, s + N);
    } else if (variant >= GROUP_AMAX) {
        const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
        for (int b = (threadIdx.x >> 5) * 128; b < N; b += warps * 128) {
            float amax = 0.0f;
            for (int i = b + lane; i < b + 128; i += 32) amax = amax_nan(amax, s[i]);
            amax = lanes_amax(amax, 32);
            const double scale = fmax((double)amax, 1e-10) / 448.0;
            const double inverse = 1.0 / scale;
            const float inverseF = (float)inverse;
            const ElemFormat e4m3 = elem_format(ELEM_E4M3);
            for (int i = b + lane; i < b + 128; i += 32) {
                if (variant == GROUP_AMAX) {
                    s[i] = s[i] + (float)scale;
                } else if (variant == GROUP_DIV) {
                    s[i] = (float)((double)s[i] / scale);
                } else if (variant == GROUP_E4M3) {
                    s[i] = (float)(round_elem((double)s[i] / scale, e4m3) * scale);
                } else if (variant == GROUP_RECIP) {
                    s[i] = (float)(round_elem(quotient_by_reciprocal(s[i], scale, inverse), e4m3) * scale);
                } else {
                    s[i] = (float)(round_elem(e4m3_quotient(s[i], scale, inverseF), e4m3) * scale);
                }
            }
        }
        __syncthreads();
    }
    for (int i = threadIdx.x; i < N / 4; i += blockDim.x) reinterpret_cast<float4*>(out)[i] = reinterpret_cast<const float4*>(s)[i];
}

int main() {
    float* rows;
    CHECK(cudaMalloc(&rows, 2 * N * sizeof(float)));
    std::vector<float> h(2 * N);
    for (int i = 0; i < 2 * N; ++i) h[i] = (float)((i * 37 % 101) - 50) / 17.0f;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int threads : {512, 1024}) {
        for (int v = 0; v < VARIANTS; ++v) {
            cudaGraph_t graph;
            cudaGraphExec_t exec;
            CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            cudaLaunchAttribute attr;
            attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr.val.programmaticStreamSerializationAllowed = 1;
            for (int k = 0; k < CHAIN; ++k) {
                cudaLaunchConfig_t cfg = {};
                cfg.stream = s;
                cfg.attrs = &attr;
                cfg.numAttrs = 1;
                cfg.gridDim = dim3(1);
                cfg.blockDim = dim3(threads);
                CHECK(cudaLaunchKernelEx(&cfg, stage, (const float*)(rows + (k & 1) * N), rows + ((k + 1) & 1) * N, v));
            }
            CHECK(cudaStreamEndCapture(s, &graph));
            CHECK(cudaGraphInstantiate(&exec, graph, 0));
            std::vector<float> us;
            for (int r = -3; r < REPS; ++r) {
                CHECK(cudaMemcpyAsync(rows, h.data(), 2 * N * sizeof(float), cudaMemcpyHostToDevice, s));
                CHECK(cudaEventRecord(a, s));
                CHECK(cudaGraphLaunch(exec, s));
                CHECK(cudaEventRecord(b, s));
                CHECK(cudaEventSynchronize(b));
                float ms;
                CHECK(cudaEventElapsedTime(&ms, a, b));
                if (r >= 0) us.push_back(ms * 1000.0f / CHAIN);
            }
            std::sort(us.begin(), us.end());
            printf("%4d threads  %-10s %6.2f us a kernel\n", threads, NAMES[v], us[us.size() / 2]);
            CHECK(cudaGraphExecDestroy(exec));
            CHECK(cudaGraphDestroy(graph));
        }
    }
    return 0;
}
