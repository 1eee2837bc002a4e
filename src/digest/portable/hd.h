// UPGUARD_HD: a function compiled for the host and, under nvcc, for the device too: the parts of
// the digest a CUDA kernel shares with the CPU code, so both compute the same bits by
// construction (docs/formats/digest.md).
#pragma once

#if defined(__CUDACC__)
#define UPGUARD_HD __host__ __device__ inline
#else
#define UPGUARD_HD inline
#endif
