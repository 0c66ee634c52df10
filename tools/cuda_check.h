// CHECK(call): a CUDA runtime call's error, with the file, line and call, ends the program (the measurement tools).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                                      \
    do {                                                                                                              \
        cudaError_t e_ = (x);                                                                                         \
        if (e_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                      \
            exit(1);                                                                                                  \
        }                                                                                                             \
    } while (0)
