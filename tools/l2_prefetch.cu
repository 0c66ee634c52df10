// Timing-only microbenchmark (not part of the engine): can an L2 prefetch of the next GEMV's weights, issued beside a
// latency-bound kernel (one block, as the router's select or a decode step's attention) or beside an earlier GEMV,
// make the GEMV after it read from L2 instead of HBM? The prefetch is a kernel of P blocks on a second stream forked
// before the first kernel (cp.async.bulk.prefetch.L2, sm_90, chunk bytes a thread). Then, serialized on one stream:
// a GEMV after a completed prefetch kernel, and after a GEMV of the same bytes. Eight buffer sets rotate so that every
// read is cold in L2. docs/cuda.md (Tried and rejected) has the H200's figures.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o /tmp/l2_prefetch tools/l2_prefetch.cu && /tmp/l2_prefetch
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

__global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}

__global__ void gemv(const uint4* __restrict__ w, long long n16, unsigned* sink) {
    unsigned acc = 0;
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = w[i + u * stride];
#pragma unroll
        for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n16; i += stride) { uint4 v = w[i]; acc ^= v.x ^ v.w; }
    if (acc == 0x12345678u) sink[0] = acc;
}

__global__ void prefetcher(const char* pf, long long bytes, int chunk) {
    // every thread of every block takes chunks in turn: bytes spread over the grid's SMs
    const long long threads = (long long)gridDim.x * blockDim.x;
    for (long long o = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * chunk; o < bytes; o += threads * chunk) {
        unsigned n = (unsigned)(bytes - o < chunk ? bytes - o : chunk);
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(pf + o), "r"(n) : "memory");
    }
}

int main() {
    int clockKhz; cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, 0);
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    int l2; cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    printf("SMs %d, L2 %d MB, clock %d MHz\n", sms, l2 >> 20, clockKhz / 1000);
    const int SETS = 8;
    const long long maxBytes = 36LL << 20;
    char* buf; cudaMalloc(&buf, maxBytes * SETS); cudaMemset(buf, 1, maxBytes * SETS);
    unsigned* sink; cudaMalloc(&sink, 4);
    cudaStream_t main_, side; cudaStreamCreateWithFlags(&main_, cudaStreamNonBlocking); cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEvent_t a, b, fork; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    const int N = 200;
    // first: spin S us (or a GEMV of firstBytes when S < 0), then a GEMV of bytes; the prefetch of the second GEMV's
    // bytes (P blocks, chunk bytes a thread) forked on the side stream before the first, when P > 0
    auto run = [&](double spinUs, long long firstBytes, long long bytes, int P, int threads, int chunk) {
        long long cycles = (long long)(spinUs * clockKhz / 1000.0);
        for (int pass = 0; pass < 2; ++pass) {
            cudaEventRecord(a, main_);
            for (int c = 0; c < N; ++c) {
                const char* p = buf + (c % SETS) * maxBytes;
                const char* q = buf + ((c + 3) % SETS) * maxBytes;
                if (P > 0) {
                    cudaEventRecord(fork, main_);
                    cudaStreamWaitEvent(side, fork, 0);
                    prefetcher<<<P, threads, 0, side>>>(p, bytes, chunk);
                }
                if (spinUs >= 0) spin<<<1, 32, 0, main_>>>(cycles);
                else gemv<<<sms * 4, 256, 0, main_>>>((const uint4*)q, firstBytes / 16, sink);
                if (bytes > 0) gemv<<<sms * 4, 256, 0, main_>>>((const uint4*)p, bytes / 16, sink);
            }
            cudaEventRecord(b, main_); cudaEventSynchronize(b);
            cudaStreamSynchronize(side);
            float ms; cudaEventElapsedTime(&ms, a, b);
            if (pass == 1) return ms * 1000.0 / N;
        }
        return 0.0;
    };
    // serialized on one stream: is what a completed prefetch leaves in L2 read faster?
    auto serial = [&](long long bytes, int mode, int P, int chunk) {
        for (int pass = 0; pass < 2; ++pass) {
            float total = 0;
            for (int c = 0; c < N; ++c) {
                const char* p = buf + (c % SETS) * maxBytes;
                if (mode == 1) prefetcher<<<P, 32, 0, main_>>>(p, bytes, chunk);
                if (mode == 2) gemv<<<sms * 4, 256, 0, main_>>>((const uint4*)p, bytes / 16, sink);  // warm by loads
                cudaEventRecord(a, main_);
                gemv<<<sms * 4, 256, 0, main_>>>((const uint4*)p, bytes / 16, sink);
                cudaEventRecord(b, main_); cudaEventSynchronize(b);
                float ms; cudaEventElapsedTime(&ms, a, b); total += ms;
            }
            if (pass == 1) return total * 1000.0 / N;
        }
        return 0.0;
    };
    auto prefetchAlone = [&](long long bytes, int P, int chunk) {
        cudaEventRecord(a, main_);
        for (int c = 0; c < N; ++c) prefetcher<<<P, 32, 0, main_>>>(buf + (c % SETS) * maxBytes, bytes, chunk);
        cudaEventRecord(b, main_); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b); return ms * 1000.0 / N;
    };
    for (long long mb : {18LL, 24LL, 35LL}) {
        long long bytes = mb << 20;
        for (double s : {3.0, 6.0, 10.0}) {
            printf("B = %lld MB, spin %4.1f us then gemv: %.2f us; side prefetch", mb, s, run(s, 0, bytes, 0, 0, 0));
            for (int P : {16, 66, 132}) for (int chunk : {16384, 65536}) for (int th : {32, 128})
                printf(" | P%d c%dK t%d %.2f", P, chunk / 1024, th, run(s, 0, bytes, P, th, chunk));
            printf("\n");
        }
        for (long long fmb : {18LL, 35LL}) {
            printf("B = %lld MB, gemv %lld MB then gemv: %.2f us; side prefetch", mb, fmb, run(-1, fmb << 20, bytes, 0, 0, 0));
            for (int P : {16, 66, 132}) for (int chunk : {16384, 65536}) for (int th : {32, 128})
                printf(" | P%d c%dK t%d %.2f", P, chunk / 1024, th, run(-1, fmb << 20, bytes, P, th, chunk));
            printf("\n");
        }
    }
    for (long long mb : {18LL, 35LL}) {
        long long bytes = mb << 20;
        printf("B = %lld MB: gemv cold %.2f us, after a gemv of the same bytes %.2f us", mb, serial(bytes, 0, 0, 0), serial(bytes, 2, 0, 0));
        for (int P : {16, 132}) for (int chunk : {4096, 16384, 65536})
            printf(" | after prefetch P%d c%dK %.2f (prefetch kernel alone %.2f)", P, chunk / 1024, serial(bytes, 1, P, chunk), prefetchAlone(bytes, P, chunk));
        printf("\n");
    }
    return 0;
}
