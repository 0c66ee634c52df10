// moe4j: a kernel that keeps the GPU busy for a while without touching memory, for benchmarks that time GPU work
// alone. Queued ahead of the start event, it holds the stream while the host submits the timed work, so start..end
// excludes the submission; unlike a large memset it leaves L2 clean (a memset leaves it full of dirty lines, whose
// write-backs then slow the first timed kernel: ~6 us on a T = 1 gate_up GEMV on the H100).
#include "moe4j_common.cuh"

extern "C" __global__ void moe_busy_wait(unsigned long long nanos) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < nanos);
}
