// moe4j: activation quantize-dequantize and the experts' activation functions, with the exact numerics of
// io.moe4j.format (MxCodec, Nvfp4Codec, Fp8Quant, Int8Quant) and io.moe4j.activation.Activation. FP8, INT8 and NVFP4
// compute in float64 from the float32 inputs, as the conformance references do (the goldens tell float32 apart);
// MX works in float32 with exact power-of-two scales. Each function names the Java method it mirrors.
#pragma once
#include "moe4j_common.cuh"

// Activation quantization kinds (CudaActivationQuant.Kind ordinals).
#define QDQ_NONE 0
#define QDQ_MX 1
#define QDQ_NVFP4 2
#define QDQ_FP8_STATIC 3
#define QDQ_FP8_TOKEN 4
#define QDQ_FP8_GROUP 5
#define QDQ_INT8_STATIC 6
#define QDQ_INT8_TOKEN 7

// Element formats of the quantizers (CudaActivationQuant element codes).
#define ELEM_E2M1 1
#define ELEM_E3M2 2
#define ELEM_E2M3 3
#define ELEM_E4M3 4

struct ElemFormat {
    int mbits;   // mantissa bits
    int emin;    // exponent of the smallest normal, 1 - bias
    int emax;    // OCP MX emax (the exponent of the largest normal)
    double maxv; // largest finite value
    bool nan;    // whether NaN survives (E4M3FN); the others encode NaN as +0
};

__device__ __forceinline__ ElemFormat elem_format(int elem) {
    switch (elem) {
        case ELEM_E3M2: return {2, -2, 4, 28.0, false};
        case ELEM_E2M3: return {3, 0, 2, 7.5, false};
        case ELEM_E4M3: return {3, -6, 8, 448.0, true};
        default: return {1, 0, 2, 6.0, false}; // E2M1
    }
}

// ElementFormat.encode(double) followed by decode: clamp to ±max, round half to even once, keep the sign (-0 too).
// Every float input is exactly a double, so this is also encode(float) for the float32 paths.
__device__ __forceinline__ double round_elem(double v, const ElemFormat& f) {
    if (v != v) return f.nan ? v : 0.0;
    double a = fmin(fabs(v), f.maxv);
    double r;
    if (a < ldexp(1.0, f.emin)) {
        // Subnormal range: a power-of-two scaling is exact, so rint rounds the true quotient once.
        r = ldexp(rint(ldexp(a, f.mbits - f.emin)), f.emin - f.mbits);
    } else {
        // Round the float64 mantissa to mbits on the bits; a carry correctly bumps the exponent.
        const int shift = 52 - f.mbits;
        unsigned long long bits = (unsigned long long)__double_as_longlong(a);
        unsigned long long kept = bits >> shift;
        const unsigned long long rest = bits & ((1ull << shift) - 1);
        const unsigned long long half = 1ull << (shift - 1);
        if (rest > half || (rest == half && (kept & 1ull))) kept++;
        r = __longlong_as_double((long long)(kept << shift));
    }
    return signbit(v) ? -r : r;
}

// Math.max over |x| that lets NaN through, as the Java absMax loops do (fmaxf would drop it).
__device__ __forceinline__ float amax_nan(float a, float v) {
    const float m = fabsf(v);
    return (a != a || m != m) ? __int_as_float(0x7FC00000) : fmaxf(a, m);
}

// MxCodec.scaleCodeForAmax: the E8M0 code of a block by the "even" rule.
__device__ __forceinline__ int mx_scale_code(float amax, const ElemFormat& f) {
    if (amax != amax) return 255;
    if (amax == 0.0f) amax = __int_as_float(0x00800000); // 2^-126
    const u32 rounded = (__float_as_uint(amax) + (1u << (22 - f.mbits))) & 0x7F800000u;
    const int field = (int)(rounded >> 23);
    if (field == 0xFF) return 254;
    return max(-127, min(127, field - 127 - f.emax)) + 127;
}

// 2^(code - 127) and its exact inverse as float32 (code 0 is the subnormal 2^-127; 255 is NaN).
__device__ __forceinline__ float e8m0_value(int code) {
    return code == 255 ? __int_as_float(0x7FC00000) : ldexpf(1.0f, code - 127);
}

__device__ __forceinline__ float e8m0_inverse(int code) {
    return code == 255 ? __int_as_float(0x7FC00000) : ldexpf(1.0f, 127 - code);
}

// The maximum of |v| over a thread block, NaN-propagating; every thread gets it. scratch: 32 floats.
__device__ float block_amax(float v, float* scratch) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = (v != v || other != other) ? __int_as_float(0x7FC00000) : fmaxf(v, other);
    }
    __syncthreads(); // scratch may still be read from a previous call
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    float m = 0.0f;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) m = amax_nan(m, scratch[w]);
    return m;
}

// The quantizer of one projection input, as CudaActivationQuant hands it to a kernel.
struct Qdq {
    int kind;
    int elem;
    int group;          // FP8_GROUP channels per group
    const float* scale; // per local expert: static scale (FP8, INT8) or NVFP4 global scale
    const int* zero;    // per local expert: INT8 static zero point, or null
};

// The NaN-propagating maximum over aligned groups of `width` lanes (a power of two up to 32); every lane of a
// group gets its group's value. All 32 lanes of the warp must take part.
__device__ __forceinline__ float lanes_amax(float v, int width) {
    for (int o = width >> 1; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = (v != v || other != other) ? __int_as_float(0x7FC00000) : fmaxf(v, other);
    }
    return v;
}

// Quantize-dequantize s[0, n) in place (shared memory), as the input of local expert e, by threads tid of nt (nt a
// multiple of 32, whole warps; no barrier at the end). The block formats spread each block over lanes: MX and NVFP4
// a lane per element (a warp holds one MX block or two NVFP4 blocks per pass), FP8 groups a warp per group. A thread
// per block, looping over its elements in float64, made these stages cost more than the GEMMs at decode. The maximum
// is order-free, so the results are the same bits as a serial loop's, whoever runs it. The per-token kinds
// (FP8_TOKEN, INT8_TOKEN) take their maximum over the whole block (block_amax): only qdq_row passes them.
__device__ void qdq_span(float* s, int n, const Qdq& q, int e, float* scratch, int tid, int nt) {
    switch (q.kind) {
        case QDQ_MX: { // MxCodec.qdqInPlace
            const ElemFormat f = elem_format(q.elem);
            for (int base = 0; base < n; base += nt) { // the same trip count in every thread: shuffles stay whole
                const int i = base + tid;
                const float v = i < n ? s[i] : 0.0f;
                const int code = mx_scale_code(lanes_amax(amax_nan(0.0f, v), 32), f);
                if (i < n) s[i] = (float)round_elem((double)(v * e8m0_inverse(code)), f) * e8m0_value(code);
            }
            break;
        }
        case QDQ_NVFP4: { // Nvfp4Codec.qdqInPlace
            const ElemFormat e2m1 = elem_format(ELEM_E2M1);
            const ElemFormat e4m3 = elem_format(ELEM_E4M3);
            const double g = (double)q.scale[e];
            for (int base = 0; base < n; base += nt) {
                const int i = base + tid;
                const float v = i < n ? s[i] : 0.0f;
                const float amax = lanes_amax(amax_nan(0.0f, v), 16);
                const double s8 = round_elem(g * (double)amax / 6.0, e4m3); // an E4M3 value, exact as float
                if (i < n) s[i] = s8 == 0.0 ? 0.0f : (float)(round_elem((double)v / (s8 / g), e2m1) * s8 / g);
            }
            break;
        }
        case QDQ_FP8_STATIC:
        case QDQ_FP8_TOKEN: { // Fp8Quant.qdqStatic / qdqPerToken
            const ElemFormat e4m3 = elem_format(ELEM_E4M3);
            double scale;
            if (q.kind == QDQ_FP8_STATIC) {
                scale = (double)q.scale[e];
            } else {
                float m = 0.0f;
                for (int i = tid; i < n; i += nt) m = amax_nan(m, s[i]);
                scale = fmax((double)block_amax(m, scratch) / 448.0, 1.0 / (448.0 * 512.0));
            }
            for (int i = tid; i < n; i += nt) s[i] = (float)(round_elem((double)s[i] / scale, e4m3) * scale);
            break;
        }
        case QDQ_FP8_GROUP: { // Fp8Quant.qdqGroup
            const ElemFormat e4m3 = elem_format(ELEM_E4M3);
            const int lane = tid & 31;
            const int warps = nt >> 5;
            for (int b = (tid >> 5) * q.group; b < n; b += warps * q.group) { // uniform within a warp
                const int end = min(n, b + q.group);
                float amax = 0.0f;
                for (int i = b + lane; i < end; i += 32) amax = amax_nan(amax, s[i]);
                const double scale = fmax((double)lanes_amax(amax, 32), 1e-10) / 448.0;
                for (int i = b + lane; i < end; i += 32) s[i] = (float)(round_elem((double)s[i] / scale, e4m3) * scale);
            }
            break;
        }
        case QDQ_INT8_STATIC:
        case QDQ_INT8_TOKEN: { // Int8Quant.qdqStatic / qdqPerToken
            double scale;
            int zp = 0;
            if (q.kind == QDQ_INT8_STATIC) {
                scale = (double)q.scale[e];
                zp = q.zero != nullptr ? q.zero[e] : 0;
            } else {
                float m = 0.0f;
                for (int i = tid; i < n; i += nt) m = amax_nan(m, s[i]);
                scale = fmax((double)block_amax(m, scratch), 1e-10) / 127.0;
            }
            for (int i = tid; i < n; i += nt) {
                const double v = (double)s[i] / scale;
                if (v != v) continue; // Math.clamp keeps NaN; fmin/fmax would not
                if (zp == 0) {
                    // Symmetric: no zero point added, so rint's -0 keeps its sign as in the reference.
                    s[i] = (float)(fmin(fmax(rint(v), -128.0), 127.0) * scale);
                } else {
                    const double code = fmin(fmax(rint(v) + zp, -128.0), 127.0);
                    s[i] = (float)((code - zp) * scale);
                }
            }
            break;
        }
        default:
            break;
    }
}

// qdq_span by the whole thread block (blockDim.x a multiple of 32), every kind, then a block barrier.
__device__ void qdq_row(float* s, int n, const Qdq& q, int e, float* scratch) {
    qdq_span(s, n, q, e, scratch, threadIdx.x, blockDim.x);
    __syncthreads();
}

// Activation kinds (CudaActivationQuant.activationCode).
#define ACT_SILU_AND_MUL 0
#define ACT_SWIGLU_OAI 1
#define ACT_GELU_AND_MUL 2
#define ACT_GELU_TANH_AND_MUL 3
#define ACT_RELU2_AND_MUL 4
#define ACT_SILU 5
#define ACT_GELU 6
#define ACT_GELU_TANH 7
#define ACT_RELU2 8

// The activations for T = double (the reference's arithmetic) or float (inputs of the f16 tile GEMM, whose f16
// rounding is ~2^-12 relative: float's ~2^-23 changes nothing there, and float64 exp costs several times more).
__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return erf(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double m_min(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ float m_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double m_max(double a, double b) { return fmax(a, b); }

template <typename T>
__device__ __forceinline__ T act_sigmoid(T x) { return T(1) / (T(1) + m_exp(-x)); }
template <typename T>
__device__ __forceinline__ T act_gelu(T x) { return T(0.5) * x * (T(1) + m_erf(x / m_sqrt(T(2)))); }
template <typename T>
__device__ __forceinline__ T act_gelu_tanh(T x) {
    return T(0.5) * x * (T(1) + m_tanh(m_sqrt(T(2) / T(3.141592653589793)) * (x + T(0.044715) * x * x * x)));
}
template <typename T>
__device__ __forceinline__ T act_relu2(T x) {
    const T r = m_max(T(0), x);
    return r * r;
}

// Activation.plain
template <typename T>
__device__ __forceinline__ T act_plain(int kind, T x) {
    switch (kind) {
        case ACT_SILU: return x * act_sigmoid(x);
        case ACT_GELU: return act_gelu(x);
        case ACT_GELU_TANH: return act_gelu_tanh(x);
        default: return act_relu2(x);
    }
}

// Activation.gated; alpha is the float constant OAI_ALPHA widened, as the Java double arithmetic has it.
template <typename T>
__device__ __forceinline__ T act_gated(int kind, T g, T u, T limit, T alpha) {
    switch (kind) {
        case ACT_SWIGLU_OAI: {
            const T gc = m_min(g, limit);
            const T uc = m_max(-limit, m_min(u, limit));
            return gc * act_sigmoid(alpha * gc) * (uc + T(1));
        }
        case ACT_GELU_AND_MUL: return act_gelu(g) * u;
        case ACT_GELU_TANH_AND_MUL: return act_gelu_tanh(g) * u;
        case ACT_RELU2_AND_MUL: return act_relu2(g) * u;
        default: return g * act_sigmoid(g) * u;
    }
}
