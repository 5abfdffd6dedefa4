/* CUDA error handling for halox's .cu files: every CUDA runtime call goes through HX_CUDA, which
 * turns a failure into an hx_status (HX_ERR_CUDA) with file, line, the failing call and CUDA's
 * own message, and returns it. HX_CUDA_LAUNCH checks a kernel launch. HX_CUDA_GOTO is the
 * variant for functions that release resources on failure. */
#ifndef HX_GPU_CUDA_CHECK_H
#define HX_GPU_CUDA_CHECK_H

#include <cuda_runtime.h>

#include "core/error.h"

#define HX_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t hx_cuda_rc_ = (call);                                                          \
        if (hx_cuda_rc_ != cudaSuccess)                                                            \
            return hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "%s failed: %s (%s)",   \
                                #call, cudaGetErrorString(hx_cuda_rc_),                            \
                                cudaGetErrorName(hx_cuda_rc_));                                    \
    } while (0)

#define HX_CUDA_GOTO(st, call, label)                                                              \
    do {                                                                                           \
        cudaError_t hx_cuda_rc_ = (call);                                                          \
        if (hx_cuda_rc_ != cudaSuccess) {                                                          \
            (st) = hx_error_set(HX_ERR_CUDA, __FILE__, __LINE__, __func__, "%s failed: %s (%s)",   \
                                #call, cudaGetErrorString(hx_cuda_rc_),                            \
                                cudaGetErrorName(hx_cuda_rc_));                                    \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* After a <<<...>>> launch: configuration errors show up in cudaGetLastError. */
#define HX_CUDA_LAUNCH(what) HX_CUDA(cudaGetLastError())

#endif
