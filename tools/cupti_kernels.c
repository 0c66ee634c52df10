// Kernel timeline of a CUDA process, kernels inside replayed CUDA graphs included: loaded through
// CUDA_INJECTION64_PATH, it turns on CUPTI's concurrent-kernel activity records and writes one line per kernel to
// $MOE4J_KERNELS_OUT (default /tmp/moe4j-kernels.txt):
//   start_ns end_ns graph_id graph_node_id grid_x grid_y grid_z name
// Used by tools/gpu_step_timeline.sh; built on the GPU machine against its own CUPTI:
//   gcc -shared -fPIC -O2 -I/usr/local/cuda/include tools/cupti_kernels.c -L/usr/local/cuda/lib64 -lcupti -o X.so
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#define BUFFER_BYTES (16u << 20)

static FILE* out;

static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = (uint8_t*) aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, BUFFER_BYTES);
    *size = BUFFER_BYTES;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                                      size_t valid) {
    CUpti_Activity* record = NULL;
    (void) context;
    (void) stream;
    (void) size;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            const CUpti_ActivityKernel10* k = (const CUpti_ActivityKernel10*) record;
            fprintf(out, "%llu %llu %u %llu %d %d %d %s\n", (unsigned long long) k->start,
                    (unsigned long long) k->end, k->graphId, (unsigned long long) k->graphNodeId, k->gridX, k->gridY,
                    k->gridZ, k->name);
        }
    }
    free(buffer);
}

static void flush_at_exit(void) {
    cuptiActivityFlushAll(1);
    fclose(out);
}

int InitializeInjection(void) {
    const char* path = getenv("MOE4J_KERNELS_OUT");
    out = fopen(path != NULL ? path : "/tmp/moe4j-kernels.txt", "w");
    if (out == NULL) {
        return 0;
    }
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    cuptiActivityFlushPeriod(200);
    atexit(flush_at_exit);
    return 1;
}
