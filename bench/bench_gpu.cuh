/* Shared by the GPU signalling benchmarks bench/link_floors.cu and bench/mps_dispatch.cu: the
 * device's global timer, system-scope acquire loads and release stores of a flag (peer memory
 * through CUDA IPC), the deadline of every wait, and the checks of a CUDA or halox call that
 * report it (with the program's BENCH_NAME and the caller's `rank`) and jump to the caller's
 * `fail` label. Define BENCH_NAME before including. */
#ifndef HX_BENCH_GPU_CUH
#define HX_BENCH_GPU_CUH

#include "halox/error.h"
#include "halox/status.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#define DEADLINE_NS 2000000000ull

static __device__ __forceinline__ uint64_t gtimer(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ uint64_t ld_acq(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

static __device__ __forceinline__ void st_rel(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, BENCH_NAME ": rank %d: %s:%d: %s: %s\n", rank, __FILE__, __LINE__,     \
                    #call, cudaGetErrorString(e_));                                                \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

#define HK(call)                                                                                   \
    do {                                                                                           \
        hx_status s_ = (call);                                                                     \
        if (s_ != HX_OK) {                                                                         \
            fprintf(stderr, BENCH_NAME ": rank %d: %s:%d: %s failed: %s\n", rank, __FILE__,        \
                    __LINE__, #call, hx_last_error_message());                                     \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

#endif
